package io.fencelock;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import com.sun.jna.StringArray;
import com.sun.jna.Structure;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;

/**
 * The C interface of libfencelock ({@code fencelock.h}) as JNA sees it, and the translation
 * of its results: a status other than {@code FL_OK} becomes the exception of its kind, with
 * this thread's last error message. Text crosses as UTF-8 bytes ending in NUL, whatever the
 * JVM's locale. Package-private: the public classes are the API.
 */
final class Native {
    private Native() {}

    /** The library, loaded once: from {@code fencelock.library.path}, JNA's search path, or
     * the jar ({@code linux-x86-64/libfencelock.so}). */
    static final Lib LIB = load();

    interface InterruptCallback extends Callback {
        byte invoke(Pointer userData);
    }

    interface LockCallback extends Callback {
        void invoke(Pointer lock, Pointer userData);
    }

    /** {@code fl_metric_callback}: {@code label_count} is a {@code size_t}. */
    interface MetricCallback extends Callback {
        void invoke(Pointer name, int instrument, double value, Pointer labelNames, Pointer labelValues,
                long labelCount, Pointer userData);
    }

    /** {@code fl_event_callback}: the level, what happened, its fields on one line. */
    interface EventCallback extends Callback {
        void invoke(int level, Pointer message, Pointer fields, Pointer userData);
    }

    @SuppressWarnings("checkstyle:MethodName")
    interface Lib extends Library {
        Pointer fl_last_error_message();
        Pointer fl_version();
        Pointer fl_lost_reason_str(int reason);

        int fl_manager_options_new(PointerByReference out);
        int fl_manager_options_set_key_prefix(Pointer opts, byte[] prefix);
        int fl_manager_options_set_retry_delay_ms(Pointer opts, long ms);
        int fl_manager_options_set_retry_jitter_ms(Pointer opts, long ms);
        int fl_manager_options_set_drift_factor(Pointer opts, double factor);
        int fl_manager_options_set_server_timeout_ms(Pointer opts, long ms);
        int fl_manager_options_set_connect_timeout_ms(Pointer opts, long ms);
        int fl_manager_options_set_refused_attempts(Pointer opts, int attempts);
        int fl_manager_options_set_replica_ack(Pointer opts, int replicas, long timeoutMs);
        int fl_manager_options_set_password(Pointer opts, byte[] password);
        int fl_manager_options_set_tls_ca_file(Pointer opts, byte[] path);
        int fl_manager_options_set_tls_ca_pem(Pointer opts, byte[] pem);
        int fl_manager_options_set_tls_client_cert_files(Pointer opts, byte[] cert, byte[] key);
        int fl_manager_options_set_tls_insecure(Pointer opts, byte insecure);
        int fl_manager_options_add_metric_name(Pointer opts, byte[] name);
        int fl_set_metric_callback(MetricCallback callback, Pointer userData);
        int fl_set_event_callback(EventCallback callback, Pointer userData, int minLevel);
        int fl_settle_all(long timeoutMs);
        void fl_manager_options_free(Pointer opts);

        int fl_manager_new(StringArray urls, long nUrls, Pointer opts, PointerByReference out);
        void fl_manager_free(Pointer manager);
        int fl_release_by_token(Pointer manager, byte[] name, byte[] token);
        int fl_extend_by_token(Pointer manager, byte[] name, byte[] token, long ttlMs, LongByReference validityMs);
        int fl_manager_is_locked(Pointer manager, byte[] name, ByteByReference out);
        int fl_manager_remaining_ms(Pointer manager, byte[] name, LongByReference out);
        int fl_manager_holder(Pointer manager, byte[] name, HolderInfo out);
        int fl_manager_options_set_holder(Pointer opts, byte[] label);

        int fl_lock_acquire_interruptible(Pointer manager, byte[] name, byte[] token, long ttlMs, long waitMs,
                InterruptCallback interrupted, Pointer userData, PointerByReference out);
        int fl_lock_acquire_with_flags(Pointer manager, byte[] name, byte[] token, long ttlMs, long waitMs,
                int flags, PointerByReference out);
        int fl_lock_acquire_many(Pointer manager, StringArray names, long nNames, byte[] token, long ttlMs,
                long waitMs, int flags, PointerByReference out);
        int fl_lock_extend(Pointer lock, long ttlMs);
        int fl_lock_auto_extend(Pointer lock, long maxHoldMs);
        int fl_lock_release(Pointer lock);
        int fl_lock_detach(Pointer lock);
        int fl_lock_name(Pointer lock, PointerByReference out);
        int fl_lock_token(Pointer lock, PointerByReference out);
        int fl_lock_fencing_token(Pointer lock, LongByReference out);
        int fl_lock_validity_ms(Pointer lock, LongByReference out);
        int fl_lock_is_lost(Pointer lock, ByteByReference out);
        int fl_lock_is_held(Pointer lock, ByteByReference out);
        int fl_lock_lost_reason(Pointer lock, IntByReference out);
        int fl_lock_name_count(Pointer lock, LongByReference out);
        int fl_lock_name_at(Pointer lock, long index, PointerByReference out);
        int fl_lock_fencing_token_at(Pointer lock, long index, LongByReference out);
        int fl_lock_on_lost(Pointer lock, LockCallback callback, Pointer userData);
        void fl_lock_free(Pointer lock);

        int fl_semaphore_new(Pointer manager, byte[] name, int limit, PointerByReference out);
        void fl_semaphore_free(Pointer semaphore);
        int fl_semaphore_acquire_interruptible(Pointer semaphore, int count, byte[] token, long ttlMs, long waitMs,
                InterruptCallback interrupted, Pointer userData, PointerByReference out);
        int fl_semaphore_acquire(Pointer semaphore, int count, byte[] token, long ttlMs, long waitMs, int flags,
                PointerByReference out);
        int fl_semaphore_state(Pointer semaphore, SemaphoreOccupancy out);
        int fl_semaphore_holders(Pointer semaphore, HolderInfo out, long capacity, LongByReference count);
        int fl_semaphore_release_by_token(Pointer semaphore, byte[] token);
        int fl_semaphore_extend_by_token(Pointer semaphore, byte[] token, long ttlMs, LongByReference validityMs);

        int fl_rwlock_new(Pointer manager, byte[] name, PointerByReference out);
        void fl_rwlock_free(Pointer rwlock);
        int fl_rwlock_acquire_interruptible(Pointer rwlock, int mode, byte[] token, long ttlMs, long waitMs,
                InterruptCallback interrupted, Pointer userData, PointerByReference out);
        int fl_rwlock_acquire(Pointer rwlock, int mode, byte[] token, long ttlMs, long waitMs, int flags,
                PointerByReference out);
        int fl_rwlock_state(Pointer rwlock, RwOccupancy out);
        int fl_rwlock_holders(Pointer rwlock, HolderInfo out, long capacity, LongByReference count);
        int fl_rwlock_release_by_token(Pointer rwlock, byte[] token);
        int fl_rwlock_extend_by_token(Pointer rwlock, byte[] token, long ttlMs, LongByReference validityMs);

        int fl_election_new(Pointer manager, byte[] name, PointerByReference out);
        void fl_election_free(Pointer election);
        int fl_election_campaign(Pointer election, byte[] value, long ttlMs, long waitMs, PointerByReference out);
        int fl_election_campaign_interruptible(Pointer election, byte[] value, long ttlMs, long waitMs,
                InterruptCallback interrupted, Pointer userData, PointerByReference out);
        int fl_election_proclaim(Pointer term, byte[] value);
        int fl_election_leader(Pointer election, LeaderInfo out);
        int fl_election_observe(Pointer election, LeaderInfo lastSeen, long waitMs, LeaderInfo out);
        int fl_election_observer_new(Pointer election, PointerByReference out);
        void fl_observer_free(Pointer observer);
        int fl_observer_next(Pointer observer, long waitMs, LeaderInfo out, ByteByReference reported);
    }

    /** {@code struct fl_semaphore_occupancy}. */
    @Structure.FieldOrder({"limit", "held", "holders", "waiters"})
    public static final class SemaphoreOccupancy extends Structure {
        public int limit;
        public long held;
        public long holders;
        public long waiters;
    }

    /** {@code struct fl_holder}. */
    @Structure.FieldOrder({"held", "remainingMs", "noted", "label", "sinceMs", "fencingToken"})
    public static final class HolderInfo extends Structure {
        public byte held;
        public long remainingMs;
        public byte noted;
        public byte[] label = new byte[129];
        public long sinceMs;
        public long fencingToken;
    }

    /** {@code struct fl_leader}. */
    @Structure.FieldOrder({"leads", "value", "valueLen", "fencingToken", "sinceMs", "remainingMs"})
    public static final class LeaderInfo extends Structure {
        public byte leads;
        public byte[] value = new byte[16385];
        public long valueLen;
        public long fencingToken;
        public long sinceMs;
        public long remainingMs;
    }

    /** {@code struct fl_rwlock_occupancy}. */
    @Structure.FieldOrder({"readers", "writer", "waiters"})
    public static final class RwOccupancy extends Structure {
        public long readers;
        public byte writer;
        public long waiters;
    }

    /** A native acquisition that asks {@code interrupted} whether to give up. */
    interface Acquisition {
        int call(InterruptCallback interrupted, PointerByReference out);
    }

    /**
     * Runs an acquisition that gives up when the calling thread is interrupted (asked about
     * every 50 ms; {@link CancelledException}, the interrupt status kept): the new lock.
     */
    static FencedLock interruptibly(Acquisition acquisition) {
        InterruptCallback interrupted = data -> (byte) (Thread.currentThread().isInterrupted() ? 1 : 0);
        PointerByReference out = new PointerByReference();
        try {
            check(acquisition.call(interrupted, out));
        } finally {
            java.lang.ref.Reference.reachabilityFence(interrupted);
        }
        return FencedLock.adopt(out.getValue());
    }

    /** A one-try acquisition's lock, or empty when it was not free. */
    static java.util.Optional<FencedLock> once(int status, PointerByReference out) {
        if (status == FL_NOT_ACQUIRED) {
            return java.util.Optional.empty();
        }
        check(status);
        return java.util.Optional.of(FencedLock.adopt(out.getValue()));
    }

    static final int FL_OK = 0;
    static final int FL_NOT_ACQUIRED = 2;
    static final int FL_CANCELLED = 6;
    static final int FL_ACQUIRE_REENTRANT = 1;

    private static Lib load() {
        String file = System.mapLibraryName("fencelock");
        String own = System.getProperty("fencelock.library.path");
        if (own != null && !own.isEmpty()) {
            String path = System.getProperty("jna.library.path", "");
            System.setProperty("jna.library.path", path.isEmpty() ? own : own + java.io.File.pathSeparator + path);
        }
        try {
            return com.sun.jna.Native.load("fencelock", Lib.class);
        } catch (UnsatisfiedLinkError e) {
            throw new UnsatisfiedLinkError("fencelock: no native library " + file + " for this platform ("
                    + Platform.RESOURCE_PREFIX + "): the jar carries " + "linux-x86-64/libfencelock.so; "
                    + "elsewhere build libfencelock (make -C bindings-c install) and set -Dfencelock.library.path "
                    + "to its directory (" + e.getMessage() + ")");
        }
    }

    /** {@code text} as UTF-8 with a trailing NUL, or {@code null}; a NUL inside cannot cross. */
    static byte[] cString(String what, String text) {
        if (text == null) {
            return null;
        }
        if (text.indexOf('\0') >= 0) {
            throw new InvalidArgumentException(what + " contains a NUL character, which the C interface cannot carry");
        }
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[utf8.length + 1];
        System.arraycopy(utf8, 0, out, 0, utf8.length);
        return out;
    }

    /** A UTF-8 C string the library owns, copied. */
    static String string(Pointer p) {
        return p == null ? "" : p.getString(0, StandardCharsets.UTF_8.name());
    }

    static StringArray cStrings(String what, java.util.List<String> texts) {
        String[] all = new String[texts.size()];
        for (int i = 0; i < all.length; i++) {
            String t = texts.get(i);
            java.util.Objects.requireNonNull(t, what + " " + i);
            cString(what, t);
            all[i] = t;
        }
        return new StringArray(all, StandardCharsets.UTF_8.name());
    }

    /** Throws the exception of {@code status}'s kind unless it is {@code FL_OK}. Call it on
     * the thread that made the call, right after it: the message is that thread's. */
    static void check(int status) {
        if (status != FL_OK) {
            throw FencelockException.of(status, string(LIB.fl_last_error_message()));
        }
    }
}
