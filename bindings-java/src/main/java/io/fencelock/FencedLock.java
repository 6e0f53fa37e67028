package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A held lock (on one name, or on several at once): its name, its token, its fencing token,
 * and what can be done with it. {@link #close()} releases it, so that
 * {@code try (var lock = manager.acquire("orders", ttl, wait)) { ... }} releases at the end of
 * the block.
 *
 * <p>The drop rule, as in every fencelock language: a lock is released by {@link #close()} or
 * {@link #release()}, by its TTL, or handed on by {@link #detach()} (then released by name and
 * token, {@link LockManager#releaseByToken}). A lock that becomes unreachable while held is
 * <em>not</em> released by the garbage collector: it stays held until its TTL ends (a warning
 * says so), and nothing is released when the JVM exits.
 *
 * <p>Send {@link #fencingToken()} with every write to the storage the lock protects, and have
 * the storage reject a token smaller than the largest it has seen: that is what keeps a holder
 * that paused past its TTL from overwriting its successor's work.
 *
 * <p>Thread-safe: calls on one lock from several threads are serialized.
 */
public final class FencedLock implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("io.fencelock");

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final AtomicBoolean settled;
    private final String token;
    private final List<String> names;
    private final List<Long> fencingTokens;
    private final Drop drop;

    private FencedLock(Pointer ptr) {
        PointerByReference text = new PointerByReference();
        Native.check(Native.LIB.fl_lock_token(ptr, text));
        this.token = Native.string(text.getValue());
        LongByReference count = new LongByReference();
        Native.check(Native.LIB.fl_lock_name_count(ptr, count));
        List<String> n = new ArrayList<>();
        List<Long> f = new ArrayList<>();
        for (long i = 0; i < count.getValue(); i++) {
            Native.check(Native.LIB.fl_lock_name_at(ptr, i, text));
            n.add(Native.string(text.getValue()));
            LongByReference fence = new LongByReference();
            Native.check(Native.LIB.fl_lock_fencing_token_at(ptr, i, fence));
            f.add(fence.getValue());
        }
        this.names = Collections.unmodifiableList(n);
        this.fencingTokens = Collections.unmodifiableList(f);
        this.settled = new AtomicBoolean(false);
        this.drop = new Drop(settled, n.get(0));
        this.handle = new Handle(ptr, "lock \"" + n.get(0) + "\"", drop);
        this.cleanable = Handle.CLEANER.register(this, handle);
    }

    /** Wraps a handle the library just made; frees it if reading it fails. */
    static FencedLock adopt(Pointer ptr) {
        try {
            return new FencedLock(ptr);
        } catch (RuntimeException e) {
            Native.LIB.fl_lock_free(ptr);
            throw e;
        }
    }

    /**
     * What the cleaner does with a lock nobody closed: frees the handle without releasing the
     * lock (detached first: the library would otherwise release a held lock in the
     * background), and warns when it was still held. It keeps the lost listener's native
     * callback reachable until the handle is freed: C may call it until then, also after the
     * lock object itself became unreachable.
     */
    private static final class Drop implements Consumer<Pointer> {
        private final AtomicBoolean settled;
        private final String name;
        volatile Native.LockCallback lostCallback;

        Drop(AtomicBoolean settled, String name) {
            this.settled = settled;
            this.name = name;
        }

        @Override
        public void accept(Pointer ptr) {
            if (settled.compareAndSet(false, true)) {
                Native.LIB.fl_lock_detach(ptr);
                LOG.log(System.Logger.Level.WARNING, "fencelock: lock \"" + name + "\" became unreachable while held, "
                        + "without close(), release() or detach(): it stays held until its TTL ends");
            }
            Native.LIB.fl_lock_free(ptr);
            lostCallback = null;
        }
    }

    /** The lock's name (the first, for a lock on several names). */
    public String name() {
        return names.get(0);
    }

    /** Every name of the lock, in the order given. */
    public List<String> names() {
        return names;
    }

    /**
     * The lock's token (the value of its Redis key: random, or the caller's). Keep it from
     * other owners: it is what releases the lock.
     */
    public String token() {
        return token;
    }

    /** The fencing token: larger than every earlier acquisition's of this name. */
    public long fencingToken() {
        return fencingTokens.get(0);
    }

    /** The fencing token of each name, in the order of {@link #names()}. */
    public List<Long> fencingTokens() {
        return fencingTokens;
    }

    /** How long the lock is still safe to use (zero once released, detached, lost or expired). */
    public Duration validity() {
        LongByReference out = new LongByReference();
        call(p -> Native.LIB.fl_lock_validity_ms(p, out));
        return Duration.ofMillis(out.getValue());
    }

    /**
     * Extends the lock to expire {@code ttl} from now.
     *
     * @throws NotHeldException when no quorum holds it any more (it is then lost)
     */
    public void extend(Duration ttl) {
        long ms = Args.ttl(ttl);
        call(p -> Native.LIB.fl_lock_extend(p, ms));
    }

    /**
     * Keeps the lock alive in the background (an extension every ttl/3) until it is released
     * or lost, and for at most {@code maxHold} since it was acquired ({@code null}: no limit).
     * Pair it with {@link #onLost} to learn when it could not be kept.
     */
    public void autoExtend(Duration maxHold) {
        long ms = maxHold == null ? 0 : Args.millis("maxHold", maxHold);
        if (maxHold != null && ms == 0) {
            throw new InvalidArgumentException("maxHold must be at least 1 ms (null for no limit), got " + maxHold);
        }
        call(p -> Native.LIB.fl_lock_auto_extend(p, ms));
    }

    /**
     * Calls {@code listener} once, on a thread of the library's, if the lock is lost while
     * held (read {@link #lostReason()} there). Never after a release or detach.
     */
    public void onLost(Consumer<FencedLock> listener) {
        Objects.requireNonNull(listener, "listener");
        WeakReference<FencedLock> self = new WeakReference<>(this);
        Native.LockCallback callback = (lock, data) -> {
            FencedLock l = self.get();
            if (l == null) {
                return;
            }
            try {
                listener.accept(l);
            } catch (RuntimeException | Error e) {
                LOG.log(System.Logger.Level.ERROR, "fencelock: the lost listener of lock \"" + l.name() + "\" threw", e);
            }
        };
        Native.LockCallback replaced = drop.lostCallback;
        drop.lostCallback = callback;
        try {
            call(p -> Native.LIB.fl_lock_on_lost(p, callback, null));
        } finally {
            java.lang.ref.Reference.reachabilityFence(replaced);
        }
    }

    /**
     * Releases the lock on every server, waking its waiters.
     *
     * @throws NotHeldException when fewer than a quorum still held it (it had expired or been
     *     taken): whatever was done under it was not protected
     * @throws InvalidArgumentException when it was already released or detached
     */
    public void release() {
        call(p -> {
            settled.set(true);
            return Native.LIB.fl_lock_release(p);
        });
    }

    /**
     * Gives the lock up without releasing it: it stays held until its TTL ends or someone
     * releases it by name and token ({@link LockManager#releaseByToken}), in this process or
     * another.
     */
    public void detach() {
        call(p -> {
            settled.set(true);
            return Native.LIB.fl_lock_detach(p);
        });
    }

    /** {@link #release()} on a thread of the library's binding: the future completes when done. */
    public CompletableFuture<Void> releaseAsync() {
        return Async.run(() -> {
            release();
            return null;
        });
    }

    /** Whether the lock is known to be lost (this process's view; see {@link #isHeld()}). */
    public boolean isLost() {
        ByteByReference out = new ByteByReference();
        call(p -> Native.LIB.fl_lock_is_lost(p, out));
        return out.getValue() != 0;
    }

    /** Why the lock was lost ({@link LostReason#NONE} while held, released or detached). */
    public LostReason lostReason() {
        IntByReference out = new IntByReference();
        call(p -> Native.LIB.fl_lock_lost_reason(p, out));
        return LostReason.of(out.getValue());
    }

    /** Asks the servers whether a quorum still holds the lock under its token (one round trip). */
    public boolean isHeld() {
        ByteByReference out = new ByteByReference();
        call(p -> Native.LIB.fl_lock_is_held(p, out));
        return out.getValue() != 0;
    }

    /**
     * Releases the lock unless it was released or detached already, and frees its handle.
     * Idempotent.
     *
     * @throws NotHeldException when the lock had been lost: the block's work was not protected
     */
    @Override
    public void close() {
        try {
            if (settled.compareAndSet(false, true)) {
                call(Native.LIB::fl_lock_release);
            }
        } finally {
            cleanable.clean();
        }
    }

    @Override
    public String toString() {
        return "FencedLock(" + names + ", fencing token " + fencingTokens + ")";
    }

    /** The native handle, for calls on a lock of another kind's class ({@link Term}). */
    Handle handle() {
        return handle;
    }

    private void call(java.util.function.ToIntFunction<Pointer> c) {
        handle.check(c);
    }
}
