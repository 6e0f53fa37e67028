package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;

/** The {@link Lock} view and the {@link CompletableFuture} forms, on a real redis-server. */
class LockViewTest extends RedisTestCase {
    private static final Duration TTL = Duration.ofSeconds(10);
    @Test
    void theLockViewExcludesOtherOwnersAndUnlocksFromAnyThread() throws Exception {
        Lock mine = manager.lockView("view", TTL);
        Lock theirs = manager.lockView("view", TTL);
        mine.lock();
        DistributedLock view = (DistributedLock) mine;
        String token = view.current().orElseThrow().token();
        assertEquals(token, redis.command("GET", "view"));
        assertFalse(theirs.tryLock());
        assertFalse(theirs.tryLock(200, TimeUnit.MILLISECONDS));
        Thread other = new Thread(mine::unlock);
        other.start();
        other.join();
        assertTrue(view.current().isEmpty());
        assertTrue(theirs.tryLock(5, TimeUnit.SECONDS));
        theirs.unlock();
        assertThrows(IllegalMonitorStateException.class, theirs::unlock);
        assertThrows(UnsupportedOperationException.class, mine::newCondition);
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, mine::lockInterruptibly);
        assertFalse(Thread.currentThread().isInterrupted(), "InterruptedException clears the status");
        assertEquals(null, redis.command("GET", "view"));
    }

    @Test
    void lockKeepsAnInterruptForLaterAndLockInterruptiblyThrows() throws Exception {
        Lock holder = manager.lockView("patient", TTL);
        holder.lock();
        Lock waiter = manager.lockView("patient", TTL);
        CountDownLatch interruptedOnce = new CountDownLatch(1);
        AtomicReference<String> failure = new AtomicReference<>("the waiter did not finish");
        Thread t = new Thread(() -> {
            try {
                waiter.lockInterruptibly();
                failure.set("lockInterruptibly acquired a held lock");
                return;
            } catch (InterruptedException e) {
                interruptedOnce.countDown();
            }
            waiter.lock(); // uninterruptible: an interrupt before or during the wait is kept
            boolean kept = Thread.currentThread().isInterrupted();
            waiter.unlock();
            failure.set(kept ? null : "lock() dropped the interrupt");
        });
        t.start();
        t.interrupt(); // ends lockInterruptibly
        assertTrue(interruptedOnce.await(30, TimeUnit.SECONDS));
        t.interrupt(); // does not end lock(): the release below does
        holder.unlock();
        t.join(30_000);
        assertFalse(t.isAlive(), "the waiter never got the lock");
        assertEquals(null, failure.get());
    }

    @Test
    void acquireAsyncCompletesWithTheLockOrIsCancelled() throws Exception {
        FencedLock held = manager.acquireAsync("async", TTL, Duration.ofSeconds(5)).get(30, TimeUnit.SECONDS);
        CompletableFuture<FencedLock> refused = manager.acquireAsync("async", TTL, Duration.ofMillis(200));
        ExecutionException e = assertThrows(ExecutionException.class, () -> refused.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof NotAcquiredException, String.valueOf(e.getCause()));
        CompletableFuture<FencedLock> waiting = manager.acquireAsync("async", TTL, null);
        assertTrue(waiting.cancel(true));
        assertThrows(CancellationException.class, waiting::join);
        held.releaseAsync().get(30, TimeUnit.SECONDS);
        try (FencedLock next = manager.acquire("async", TTL, Duration.ofSeconds(10))) {
            assertTrue(next.fencingToken() > held.fencingToken());
        }
        held.close();
    }
}
