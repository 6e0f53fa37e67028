package io.fencelock;

import com.sun.jna.Pointer;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * A native handle (a manager, a lock) that is freed exactly once, never while a call on it is
 * in progress: calls share it ({@link #enter()} / {@link #done()}), freeing takes it alone.
 * It is the {@link java.lang.ref.Cleaner}'s action too, so it never refers to the Java object
 * that owns it.
 */
final class Handle implements Runnable {
    /** The one cleaner of every fencelock object (one daemon thread). */
    static final java.lang.ref.Cleaner CLEANER = java.lang.ref.Cleaner.create();

    private final ReentrantReadWriteLock use = new ReentrantReadWriteLock();
    private final String what;
    private final Consumer<Pointer> free;
    private Pointer ptr;

    Handle(Pointer ptr, String what, Consumer<Pointer> free) {
        this.ptr = ptr;
        this.what = what;
        this.free = free;
    }

    /** The pointer for one call, which must end with {@link #done()}. */
    Pointer enter() {
        use.readLock().lock();
        if (ptr == null) {
            use.readLock().unlock();
            throw new InvalidArgumentException(what + " is closed");
        }
        return ptr;
    }

    void done() {
        use.readLock().unlock();
    }

    /** {@code call} on the pointer, as one call. */
    <T> T with(java.util.function.Function<Pointer, T> call) {
        Pointer p = enter();
        try {
            return call.apply(p);
        } finally {
            done();
        }
    }

    /** A native call on the pointer whose status is checked ({@link Native#check}). */
    void check(java.util.function.ToIntFunction<Pointer> call) {
        Pointer p = enter();
        try {
            Native.check(call.applyAsInt(p));
        } finally {
            done();
        }
    }

    /** Frees the handle, once; waits for calls in progress. */
    @Override
    public void run() {
        use.writeLock().lock();
        try {
            if (ptr != null) {
                free.accept(ptr);
                ptr = null;
            }
        } finally {
            use.writeLock().unlock();
        }
    }
}
