package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The Java API against a real redis-server that each test starts on a free port. */
class LockManagerTest extends RedisTestCase {
    private static final Duration TTL = Duration.ofSeconds(10);
    @Test
    void aLockIsTheKeyWithItsTokenAndCloseReleasesIt() throws Exception {
        long first;
        try (FencedLock lock = manager.acquire("orders", TTL, Duration.ofSeconds(1))) {
            assertEquals("orders", lock.name());
            assertEquals(lock.token(), redis.command("GET", "orders"));
            assertTrue(lock.isHeld());
            assertTrue(manager.isLocked("orders"));
            assertTrue(manager.remaining("orders").orElseThrow().compareTo(Duration.ofSeconds(8)) > 0);
            assertTrue(lock.validity().compareTo(Duration.ofSeconds(8)) > 0);
            first = lock.fencingToken();
        }
        assertNull(redis.command("GET", "orders"));
        assertFalse(manager.isLocked("orders"));
        assertTrue(manager.remaining("orders").isEmpty());
        try (FencedLock next = manager.acquire("orders", TTL)) {
            assertTrue(next.fencingToken() > first, next + " after " + first);
        }
    }

    @Test
    void aHeldNameIsRefusedAndTheWaitLimitSaysSo() {
        try (FencedLock held = manager.acquire("jobs", TTL)) {
            assertTrue(manager.tryAcquire("jobs", TTL).isEmpty());
            NotAcquiredException e = assertThrows(NotAcquiredException.class,
                    () -> manager.acquire("jobs", TTL, Duration.ofMillis(300)));
            assertEquals(FencelockException.Kind.NOT_ACQUIRED, e.kind());
            assertTrue(e.getMessage().contains("jobs"), e.getMessage());
            assertTrue(held.isHeld());
        }
        try (FencedLock free = manager.tryAcquire("jobs", TTL).orElseThrow()) {
            assertTrue(free.isHeld());
        }
    }

    @Test
    void aWaiterGetsTheLockWhenTheHolderReleasesIt() throws Exception {
        FencedLock holder = manager.acquire("queue", TTL);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Long> waiter = pool.submit(() -> {
                try (FencedLock l = manager.acquire("queue", TTL, Duration.ofSeconds(30))) {
                    return l.fencingToken();
                }
            });
            holder.release();
            assertTrue(waiter.get(30, TimeUnit.SECONDS) > holder.fencingToken());
            assertThrows(InvalidArgumentException.class, holder::release, "released twice");
            holder.close();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void badInputIsATypedErrorBeforeAnyNetworkCall() throws Exception {
        // Nothing listens on this port: any network call would fail Unavailable instead.
        try (LockManager nowhere = LockManager.create("redis://127.0.0.1:" + RedisServer.freePort())) {
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("", TTL));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("a\0b", TTL));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("x", Duration.ZERO));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("x", Duration.ofMillis(-5)));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("x", TTL, Duration.ofMillis(-1)));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquire("x".repeat(2000), TTL));
            assertThrows(InvalidArgumentException.class, () -> nowhere.acquireMany(List.of("a", "a"), TTL, null));
            assertThrows(InvalidArgumentException.class, () -> nowhere.releaseByToken("x", ""));
            assertThrows(NullPointerException.class, () -> nowhere.acquire(null, TTL));
            assertThrows(NullPointerException.class, () -> nowhere.acquire("x", null));
            UnavailableException down = assertThrows(UnavailableException.class,
                    () -> nowhere.acquire("x", TTL, Duration.ZERO));
            assertTrue(down.getMessage().contains("127.0.0.1"), down.getMessage());
        }
        InvalidArgumentException url = assertThrows(InvalidArgumentException.class,
                () -> LockManager.create("redis://user:s3cret-pw@127.0.0.1:notaport"));
        assertFalse(url.getMessage().contains("s3cret-pw"), url.getMessage());
        InvalidArgumentException drift = assertThrows(InvalidArgumentException.class,
                () -> LockManager.builder(redis.url()).driftFactor(0.7).build());
        assertTrue(drift.getMessage().contains("drift_factor"), drift.getMessage());
        assertThrows(InvalidArgumentException.class, () -> LockManager.create());
        manager.close();
        assertThrows(InvalidArgumentException.class, () -> manager.acquire("x", TTL), "closed manager");
    }

    @Test
    void interruptingTheThreadGivesTheWaitUp() throws Exception {
        try (FencedLock held = manager.acquire("busy", TTL)) {
            AtomicReference<Throwable> outcome = new AtomicReference<>();
            AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread waiter = new Thread(() -> {
                started.countDown();
                try (FencedLock l = manager.acquire("busy", TTL)) {
                    outcome.set(new AssertionError("acquired a held lock: " + l));
                } catch (Throwable t) {
                    outcome.set(t);
                }
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            });
            waiter.start();
            started.await();
            waiter.interrupt();
            // A hang check: the wait is polled about every 50 ms.
            waiter.join(20_000);
            assertFalse(waiter.isAlive(), "the interrupted wait did not end");
            assertTrue(outcome.get() instanceof CancelledException, String.valueOf(outcome.get()));
            assertEquals(Boolean.TRUE, stillInterrupted.get());
            assertTrue(held.isHeld());
        }
    }

    @Test
    void aLostLockCallsItsListenerWithTheReason() throws Exception {
        try (FencedLock lock = manager.acquire("fragile", Duration.ofMillis(1500))) {
            CountDownLatch lost = new CountDownLatch(1);
            AtomicReference<LostReason> reason = new AtomicReference<>();
            lock.onLost(l -> {
                reason.set(l.lostReason());
                lost.countDown();
            });
            lock.autoExtend(null);
            redis.command("SET", "fragile", "someone-else");
            assertTrue(lost.await(20, TimeUnit.SECONDS), "no lost signal");
            assertEquals(LostReason.TAKEN, reason.get());
            assertTrue(lock.isLost());
            assertEquals("someone-else", redis.command("GET", "fragile"));
            assertThrows(NotHeldException.class, lock::close);
        }
    }

    @Test
    void theRequestIdPairReleasesFromAnotherManager() throws Exception {
        String requestId = "request-7f3a";
        FencedLock lock = manager.acquireWithToken("invoice", requestId, TTL, Duration.ZERO);
        assertEquals(requestId, lock.token());
        lock.detach();
        lock.close();
        assertEquals(requestId, redis.command("GET", "invoice"), "detach and close release nothing");
        try (LockManager other = LockManager.create(redis.url())) {
            assertThrows(NotHeldException.class, () -> other.releaseByToken("invoice", "another-id"));
            assertEquals(requestId, redis.command("GET", "invoice"));
            other.extendByToken("invoice", requestId, Duration.ofSeconds(30));
            other.releaseByToken("invoice", requestId);
            assertNull(redis.command("GET", "invoice"));
            assertThrows(NotHeldException.class, () -> other.releaseByToken("invoice", requestId));
        }
    }

    @Test
    void severalNamesAreTakenAllOrNone() throws Exception {
        try (FencedLock blocker = manager.acquire("{o}:stock", TTL)) {
            assertThrows(NotAcquiredException.class,
                    () -> manager.acquireMany(List.of("{o}:payment", "{o}:stock"), TTL, Duration.ofMillis(200)));
            assertNull(redis.command("GET", "{o}:payment"), "none taken while one is held");
        }
        try (FencedLock both = manager.acquireMany(List.of("{o}:payment", "{o}:stock"), TTL, Duration.ZERO)) {
            assertEquals(List.of("{o}:payment", "{o}:stock"), both.names());
            assertEquals(2, both.fencingTokens().size());
            assertEquals(both.token(), redis.command("GET", "{o}:payment"));
            assertEquals(both.token(), redis.command("GET", "{o}:stock"));
        }
        assertNull(redis.command("GET", "{o}:stock"));
    }

    @Test
    void threadsOfOneProcessExcludeEachOther() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<?>> all = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            all.add(pool.submit(() -> {
                for (int i = 0; i < 15; i++) {
                    try (FencedLock l = manager.acquire("counter", TTL, Duration.ofSeconds(60))) {
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        inside.decrementAndGet();
                        done.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : all) {
            f.get(120, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(0, overlaps.get());
        assertEquals(120, done.get());
    }

    @Test
    void aLockNobodyClosedIsNotReleasedByTheGarbageCollector() throws Exception {
        java.util.logging.Logger log = java.util.logging.Logger.getLogger("io.fencelock");
        CountDownLatch warned = new CountDownLatch(1);
        java.util.logging.Handler handler = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getMessage().contains("\"forgotten\" became unreachable")) {
                    warned.countDown();
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(handler);
        try {
            String token = forget();
            for (int i = 0; i < 200 && warned.getCount() > 0; i++) {
                System.gc();
                warned.await(100, TimeUnit.MILLISECONDS);
            }
            assertEquals(0, warned.getCount(), "the cleaner did not run");
            assertEquals(token, redis.command("GET", "forgotten"), "still held until its TTL");
        } finally {
            log.removeHandler(handler);
        }
    }

    private String forget() {
        return manager.acquire("forgotten", TTL).token();
    }

    @Test
    void redlockKeepsWorkingWithOneServerOfThreeDown() throws Exception {
        try (RedisServer a = RedisServer.start(); RedisServer b = RedisServer.start()) {
            try (LockManager redlock = LockManager.builder(redis.url(), a.url(), b.url())
                    .serverTimeout(Duration.ofMillis(500)).build()) {
                long first;
                try (FencedLock l = redlock.acquire("shared", TTL, Duration.ofSeconds(5))) {
                    first = l.fencingToken();
                    assertEquals(l.token(), b.command("GET", "shared"));
                }
                b.close();
                try (FencedLock l = redlock.acquire("shared", TTL, Duration.ofSeconds(5))) {
                    assertTrue(l.fencingToken() > first);
                    assertEquals(l.token(), a.command("GET", "shared"));
                    assertNotEquals(null, redis.command("GET", "shared"));
                }
            }
        }
    }
}
