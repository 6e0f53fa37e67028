package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Semaphores and read-write locks from Java, on a real redis-server. */
class FamilyTest extends RedisTestCase {
    private static final Duration TTL = Duration.ofSeconds(10);
    @Test
    void aSemaphoreKeepsItsLimitAcrossThreads() throws Exception {
        try (FencedSemaphore pool = manager.semaphore("workers", 2)) {
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger done = new AtomicInteger();
            ExecutorService threads = Executors.newFixedThreadPool(6);
            List<Future<?>> all = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                all.add(threads.submit(() -> {
                    for (int i = 0; i < 8; i++) {
                        try (FencedLock permit = pool.acquire(TTL, Duration.ofSeconds(60))) {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            Thread.yield();
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
            threads.shutdown();
            assertEquals(48, done.get());
            assertTrue(most.get() <= 2, "more than the limit at once: " + most.get());
        }
    }

    @Test
    void aSemaphoreCountsPermitsAndRefusesWhatDoesNotFit() {
        try (FencedSemaphore pool = manager.semaphore("slots", 3)) {
            FencedLock two = pool.acquire(2, TTL, Duration.ZERO);
            FencedLock one = pool.tryAcquire(1, TTL).orElseThrow();
            assertEquals(new FencedSemaphore.Occupancy(3, 3, 2, 0), pool.state());
            assertTrue(pool.tryAcquire(1, TTL).isEmpty());
            assertThrows(NotAcquiredException.class, () -> pool.acquire(1, TTL, Duration.ofMillis(200)));
            assertThrows(InvalidArgumentException.class, () -> pool.acquire(4, TTL, Duration.ZERO));
            assertTrue(one.fencingToken() > two.fencingToken());
            pool.releaseByToken(one.token());
            assertThrows(NotHeldException.class, one::close);
            two.close();
            assertEquals(0, pool.state().held());
            try (FencedSemaphore other = manager.semaphore("slots", 5); FencedLock l = other.acquire(TTL, null)) {
                assertThrows(InvalidArgumentException.class, () -> pool.acquire(TTL, Duration.ZERO), "another limit");
            }
        }
        assertThrows(InvalidArgumentException.class, () -> manager.semaphore("slots", 0));
        try (FencedLock lock = manager.acquire("plain", TTL); FencedSemaphore s = manager.semaphore("plain", 2)) {
            assertThrows(WrongKindException.class, () -> s.acquire(TTL, Duration.ZERO));
        }
    }

    @Test
    void readersShareAndAWriterIsAlone() {
        try (FencedReadWriteLock rw = manager.readWriteLock("config")) {
            FencedLock r1 = rw.read(TTL, Duration.ZERO);
            FencedLock r2 = rw.tryRead(TTL).orElseThrow();
            assertEquals(new FencedReadWriteLock.Occupancy(2, false, 0), rw.state());
            assertTrue(rw.tryWrite(TTL).isEmpty());
            r1.close();
            r2.close();
            try (FencedLock w = rw.write(TTL, Duration.ofSeconds(5))) {
                assertTrue(w.fencingToken() > r2.fencingToken());
                assertTrue(rw.state().writer());
                assertTrue(rw.tryRead(TTL).isEmpty());
            }
            assertFalse(rw.state().writer());
        }
    }

    @Test
    void interruptingAFamilyWaitGivesItUp() throws Exception {
        try (FencedReadWriteLock rw = manager.readWriteLock("doc");
                FencedSemaphore one = manager.semaphore("single", 1);
                FencedLock reader = rw.read(TTL, null);
                FencedLock permit = one.acquire(TTL, null)) {
            for (Runnable wait : List.<Runnable>of(() -> rw.write(TTL, null), () -> one.acquire(TTL, null))) {
                AtomicReference<Throwable> outcome = new AtomicReference<>();
                Thread waiter = new Thread(() -> {
                    try {
                        wait.run();
                        outcome.set(new AssertionError("acquired while held"));
                    } catch (Throwable t) {
                        outcome.set(t);
                    }
                });
                waiter.start();
                waiter.interrupt();
                waiter.join(20_000);
                assertFalse(waiter.isAlive(), "the interrupted wait did not end");
                assertTrue(outcome.get() instanceof CancelledException, String.valueOf(outcome.get()));
            }
            assertTrue(reader.isHeld() && permit.isHeld());
        }
    }
}
