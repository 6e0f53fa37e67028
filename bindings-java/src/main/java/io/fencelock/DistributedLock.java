package io.fencelock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/**
 * A {@link Lock} view of one name, for code written against {@code java.util.concurrent}:
 * each acquisition takes the distributed lock for the view's TTL, and {@link #unlock()}
 * releases it. Made by {@link LockManager#lockView(String, Duration)}.
 *
 * <p>What cannot hold across processes, and so differs from {@code ReentrantLock}:
 * <ul>
 *   <li>it is not reentrant: a second {@link #lock()} through the same view (or any other
 *       owner) waits until the first is released;</li>
 *   <li>it has no owner thread: {@link #unlock()} from any thread releases the view's current
 *       hold, and throws {@link IllegalMonitorStateException} when it holds none;</li>
 *   <li>the hold ends by itself after the TTL unless extended: {@link #current()} gives the
 *       {@link FencedLock} (its fencing token, {@link FencedLock#autoExtend}); </li>
 *   <li>{@link #newCondition()} is not supported: a condition needs a monitor in one process.</li>
 * </ul>
 */
public final class DistributedLock implements Lock {
    private final LockManager manager;
    private final String name;
    private final Duration ttl;
    private FencedLock held;

    DistributedLock(LockManager manager, String name, Duration ttl) {
        this.manager = manager;
        this.name = Args.name(name);
        Args.ttl(ttl);
        this.ttl = ttl;
    }

    /** Waits as long as it takes; an interrupt meanwhile is kept for later, as {@code Lock} asks. */
    @Override
    public void lock() {
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try {
                    hold(manager.acquire(name, ttl));
                    return;
                } catch (CancelledException e) {
                    interrupted |= Thread.interrupted();
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        try {
            hold(manager.acquire(name, ttl));
        } catch (CancelledException e) {
            Thread.interrupted();
            InterruptedException ie = new InterruptedException("the wait for lock \"" + name + "\" was interrupted");
            ie.initCause(e);
            throw ie;
        }
    }

    @Override
    public boolean tryLock() {
        Optional<FencedLock> lock = manager.tryAcquire(name, ttl);
        lock.ifPresent(this::hold);
        return lock.isPresent();
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException();
        }
        try {
            hold(manager.acquire(name, ttl, Duration.ofNanos(Math.max(0, unit.toNanos(time)))));
            return true;
        } catch (NotAcquiredException e) {
            return false;
        } catch (CancelledException e) {
            Thread.interrupted();
            throw new InterruptedException("the wait for lock \"" + name + "\" was interrupted");
        }
    }

    /**
     * Releases the view's current hold.
     *
     * @throws IllegalMonitorStateException when the view holds nothing
     * @throws NotHeldException when the hold had been lost (expired or taken)
     */
    @Override
    public void unlock() {
        FencedLock lock;
        synchronized (this) {
            lock = held;
            held = null;
        }
        if (lock == null) {
            throw new IllegalMonitorStateException("lock \"" + name + "\" is not held through this view");
        }
        lock.close();
    }

    /** Not supported: a condition needs a monitor in one process. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("a distributed lock has no conditions: they need a monitor in one process");
    }

    /** The view's current hold, if any. */
    public synchronized Optional<FencedLock> current() {
        return Optional.ofNullable(held);
    }

    private synchronized void hold(FencedLock lock) {
        held = lock;
    }

    @Override
    public String toString() {
        return "DistributedLock(\"" + name + "\", ttl " + ttl + ")";
    }
}
