package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.time.Duration;
import java.util.Optional;

/**
 * A fair read-write lock on a name, across processes and languages: many readers or one
 * writer. Phase-fair: a waiting writer stops new readers, and the readers that queued before
 * the next writer enter together when it releases. Each acquisition is a {@link FencedLock}
 * (a read share or the write hold, with its fencing token). Made by
 * {@link LockManager#readWriteLock}; thread-safe; {@link #close()} frees the handle (leases
 * taken through it are not affected).
 */
public final class FencedReadWriteLock implements AutoCloseable {
    private static final int READ = 0;
    private static final int WRITE = 1;

    private final Handle handle;
    private final java.lang.ref.Cleaner.Cleanable cleanable;
    private final String name;

    /** What the servers count: read shares held, whether a writer holds it, callers in line. */
    public record Occupancy(long readers, boolean writer, long waiters) {}

    FencedReadWriteLock(Pointer ptr, String name) {
        this.handle = new Handle(ptr, "read-write lock \"" + name + "\"", Native.LIB::fl_rwlock_free);
        this.cleanable = Handle.CLEANER.register(this, handle);
        this.name = name;
    }

    public String name() {
        return name;
    }

    /**
     * A read share for {@code ttl}, waiting at most {@code wait} ({@code null}: as long as it
     * takes); interrupting the thread gives the wait up ({@link CancelledException}).
     */
    public FencedLock read(Duration ttl, Duration wait) {
        return acquire(READ, ttl, wait);
    }

    /** The write hold for {@code ttl}, waiting at most {@code wait}, as {@link #read}. */
    public FencedLock write(Duration ttl, Duration wait) {
        return acquire(WRITE, ttl, wait);
    }

    /** One try at a read share: empty while a writer holds or waits. */
    public Optional<FencedLock> tryRead(Duration ttl) {
        return tryAcquire(READ, ttl);
    }

    /** One try at the write hold: empty while anyone holds or waits. */
    public Optional<FencedLock> tryWrite(Duration ttl) {
        return tryAcquire(WRITE, ttl);
    }

    private FencedLock acquire(int mode, Duration ttl, Duration wait) {
        long ttlMs = Args.ttl(ttl);
        long waitMs = Args.waitLimit(wait);
        return handle.with(rw -> Native.interruptibly((interrupted, out) -> Native.LIB.fl_rwlock_acquire_interruptible(rw, mode,
                    null, ttlMs, waitMs, interrupted, null, out)));
    }

    private Optional<FencedLock> tryAcquire(int mode, Duration ttl) {
        long ttlMs = Args.ttl(ttl);
        PointerByReference out = new PointerByReference();
        return handle.with(rw -> Native.once(Native.LIB.fl_rwlock_acquire(rw, mode, null, ttlMs, 0, 0, out), out));
    }

    /** The servers' count, changing nothing. */
    public Occupancy state() {
        Native.RwOccupancy o = new Native.RwOccupancy();
        handle.check(rw -> Native.LIB.fl_rwlock_state(rw, o));
        return new Occupancy(o.readers, o.writer != 0, o.waiters);
    }

    /**
     * The readers or the writer that left a note (see {@link FencedSemaphore#holders()}).
     */
    public java.util.List<Holder> holders() {
        return Holder.listed(handle, Native.LIB::fl_rwlock_holders);
    }

    /** Releases the share or hold held with {@code token}. */
    public void releaseByToken(String token) {
        ByToken.release(handle, token, Native.LIB::fl_rwlock_release_by_token);
    }

    /** Extends the share or hold held with {@code token} to {@code ttl} from now; the validity that gives. */
    public Duration extendByToken(String token, Duration ttl) {
        return ByToken.extend(handle, token, ttl, Native.LIB::fl_rwlock_extend_by_token);
    }

    /** Frees the handle; leases taken through it are not affected. Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "FencedReadWriteLock(\"" + name + "\")";
    }
}
