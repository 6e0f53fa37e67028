package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.time.Duration;
import java.util.Optional;

/**
 * A counting semaphore: at most {@link #limit()} permits of a name held at any instant,
 * across every process and language using the name; callers wait in line, first come, first
 * served. Each acquisition is a {@link FencedLock} (a lease, with its fencing token), released
 * by {@code close()}, by its TTL, or handed on. Made by {@link LockManager#semaphore}; it keeps
 * its manager's connections alive. Thread-safe; {@link #close()} frees the handle (leases
 * taken through it are not affected).
 */
public final class FencedSemaphore implements AutoCloseable {
    private final Handle handle;
    private final java.lang.ref.Cleaner.Cleanable cleanable;
    private final String name;
    private final int limit;

    /** What the servers count: permits held, leases, callers in line. */
    public record Occupancy(int limit, long held, long holders, long waiters) {}

    FencedSemaphore(Pointer ptr, String name, int limit) {
        this.handle = new Handle(ptr, "semaphore \"" + name + "\"", Native.LIB::fl_semaphore_free);
        this.cleanable = Handle.CLEANER.register(this, handle);
        this.name = name;
        this.limit = limit;
    }

    public String name() {
        return name;
    }

    public int limit() {
        return limit;
    }

    /** One permit for {@code ttl}, waiting at most {@code wait} ({@code null}: as long as it takes). */
    public FencedLock acquire(Duration ttl, Duration wait) {
        return acquire(1, ttl, wait);
    }

    /**
     * {@code permits} permits (all or none) for {@code ttl}, waiting at most {@code wait}
     * ({@code null}: as long as it takes). Interrupting the thread gives the wait up.
     *
     * @throws NotAcquiredException when the wait limit passed
     * @throws CancelledException when the thread was interrupted while it waited
     * @throws WrongKindException when the name is held as a lock or a read-write lock
     */
    public FencedLock acquire(int permits, Duration ttl, Duration wait) {
        long ttlMs = Args.ttl(ttl);
        long waitMs = Args.waitLimit(wait);
        return handle.with(s -> Native.interruptibly((interrupted, out) -> Native.LIB.fl_semaphore_acquire_interruptible(s,
                    permits, null, ttlMs, waitMs, interrupted, null, out)));
    }

    /** One try for {@code permits} permits: empty when they are not free or others wait ahead. */
    public Optional<FencedLock> tryAcquire(int permits, Duration ttl) {
        long ttlMs = Args.ttl(ttl);
        PointerByReference out = new PointerByReference();
        return handle.with(s -> Native.once(Native.LIB.fl_semaphore_acquire(s, permits, null, ttlMs, 0, 0, out), out));
    }

    /** The servers' count, changing nothing. */
    public Occupancy state() {
        Native.SemaphoreOccupancy o = new Native.SemaphoreOccupancy();
        handle.check(s -> Native.LIB.fl_semaphore_state(s, o));
        return new Occupancy(o.limit, o.held, o.holders, o.waiters);
    }

    /**
     * The holders that left a note (their managers were built with {@link LockManager.Builder#holder(String)}): label, since when, fencing token and how long each lease still runs, longest first. Leases without a note are only counted by {@link #state()}.
     */
    public java.util.List<Holder> holders() {
        return Holder.listed(handle, Native.LIB::fl_semaphore_holders);
    }

    /** Releases the lease held with {@code token} (one handed across processes). */
    public void releaseByToken(String token) {
        ByToken.release(handle, token, Native.LIB::fl_semaphore_release_by_token);
    }

    /** Extends the lease held with {@code token} to {@code ttl} from now; the validity that gives. */
    public Duration extendByToken(String token, Duration ttl) {
        return ByToken.extend(handle, token, ttl, Native.LIB::fl_semaphore_extend_by_token);
    }

    /** Frees the handle; leases taken through it are not affected. Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "FencedSemaphore(\"" + name + "\", limit " + limit + ")";
    }
}
