package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.ByteByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Takes distributed locks on one Redis server, or on several independent ones (Redlock,
 * quorum n/2+1), through libfencelock: the same core, the same keys and the same guarantees
 * as fencelock in Rust, Python, Node and C, so a lock taken here excludes theirs.
 *
 * <pre>{@code
 * try (var manager = LockManager.create("redis://127.0.0.1:6379");
 *      var lock = manager.acquire("orders", Duration.ofSeconds(30), Duration.ofSeconds(5))) {
 *     store.write(record, lock.fencingToken());
 * } // released here
 * }</pre>
 *
 * <p>Each URL is {@code redis://[[user]:password@]host[:port][/db]}, {@code rediss://} (TLS),
 * {@code redis+sentinel://host:port[,host:port]/master}, {@code redis+cluster://host:port[,...]}
 * or {@code redis+unix:///path}. No server is contacted when the manager is made.
 *
 * <p>Thread-safe: share one manager per set of servers. {@link #close()} frees it; locks it
 * made stay usable until they are closed themselves. A manager that becomes unreachable
 * without being closed is freed by the garbage collector (nothing is released by that).
 */
public final class LockManager implements AutoCloseable {

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    private LockManager(Pointer ptr) {
        ProcessHooks.install();
        this.handle = new Handle(ptr, "the lock manager", Native.LIB::fl_manager_free);
        this.cleanable = Handle.CLEANER.register(this, handle);
    }

    /** A manager with the default options on {@code urls} (one, or several for Redlock). */
    public static LockManager create(String... urls) {
        return builder(urls).build();
    }

    /** Options for a manager on {@code urls}. */
    public static Builder builder(String... urls) {
        Objects.requireNonNull(urls, "urls");
        return new Builder(List.of(urls));
    }

    /** The version of libfencelock in use, such as {@code "0.1.0"}. */
    public static String version() {
        return Native.string(Native.LIB.fl_version());
    }

    /**
     * Acquires {@code name} for {@code ttl}, waiting as long as it takes. Waiters are woken by
     * the holder's release in the order they came (no polling). Interrupting the thread gives
     * the wait up with a {@link CancelledException}.
     */
    public FencedLock acquire(String name, Duration ttl) {
        return acquire(name, ttl, null);
    }

    /**
     * Acquires {@code name} for {@code ttl}, waiting at most {@code wait} ({@code null}: as long
     * as it takes; zero: one try).
     *
     * @throws NotAcquiredException when the wait limit passed while another owner held it
     * @throws UnavailableException when too few servers answered
     * @throws CancelledException when the thread was interrupted while it waited
     */
    public FencedLock acquire(String name, Duration ttl, Duration wait) {
        return acquireWithToken(name, null, ttl, wait);
    }

    /**
     * As {@link #acquire(String, Duration, Duration)}, with the caller's token (a request id)
     * as the lock's value instead of a random one ({@code null}: random), so that any process
     * that knows it can release the lock ({@link #releaseByToken}). The token is exclusive: a
     * second acquisition with it waits like any other owner.
     */
    public FencedLock acquireWithToken(String name, String token, Duration ttl, Duration wait) {
        byte[] n = Native.cString("name", Args.name(name));
        byte[] t = Native.cString("token", token);
        long ttlMs = Args.ttl(ttl);
        long waitMs = Args.waitLimit(wait);
        return handle.with(m -> Native.interruptibly(
                    (interrupted, out) -> Native.LIB.fl_lock_acquire_interruptible(m, n, t, ttlMs, waitMs,
                            interrupted, null, out)));
    }

    /** One try: the lock, or empty when another owner holds {@code name}. */
    public Optional<FencedLock> tryAcquire(String name, Duration ttl) {
        return tryAcquireWithToken(name, null, ttl);
    }

    /**
     * One try with the caller's token ({@code null}: random), as the classic request-id lock
     * tries: the lock, or empty when another owner (or another holder of this token) holds it.
     */
    public Optional<FencedLock> tryAcquireWithToken(String name, String token, Duration ttl) {
        byte[] n = Native.cString("name", Args.name(name));
        byte[] t = Native.cString("token", token);
        long ttlMs = Args.ttl(ttl);
        PointerByReference out = new PointerByReference();
        return handle.with(m -> Native.once(Native.LIB.fl_lock_acquire_with_flags(m, n, t, ttlMs, 0, 0, out), out));
    }

    /**
     * Acquires every one of {@code names} at once, or none, as one lock with one fencing token
     * per name ({@link FencedLock#fencingTokens()}); waiting does not hold any of them, so
     * locks on overlapping names never deadlock. On a Redis Cluster the names must share a
     * hash slot (a common hash tag: {@code {order-42}:payment}, {@code {order-42}:stock}).
     */
    public FencedLock acquireMany(List<String> names, Duration ttl, Duration wait) {
        Objects.requireNonNull(names, "names");
        var all = Native.cStrings("name", names);
        long ttlMs = Args.ttl(ttl);
        long waitMs = Args.waitLimit(wait);
        PointerByReference out = new PointerByReference();
        handle.check(m -> Native.LIB.fl_lock_acquire_many(m, all, names.size(), null, ttlMs, waitMs, 0, out));
        return FencedLock.adopt(out.getValue());
    }

    /**
     * Releases {@code name} if it is held with {@code token}, without a lock object: the
     * request-id pattern, or a lock handed over by {@link FencedLock#detach()}.
     *
     * @throws NotHeldException when it was not held with this token (expired, or another's)
     */
    public void releaseByToken(String name, String token) {
        byte[] n = Native.cString("name", Args.name(name));
        byte[] t = Native.cString("token", Objects.requireNonNull(token, "token"));
        handle.check(m -> Native.LIB.fl_release_by_token(m, n, t));
    }

    /** Extends {@code name}, held with {@code token}, to expire {@code ttl} from now; the validity that gives. */
    public Duration extendByToken(String name, String token, Duration ttl) {
        byte[] n = Native.cString("name", Args.name(name));
        byte[] t = Native.cString("token", Objects.requireNonNull(token, "token"));
        long ttlMs = Args.ttl(ttl);
        LongByReference validity = new LongByReference();
        handle.check(m -> Native.LIB.fl_extend_by_token(m, n, t, ttlMs, validity));
        return Duration.ofMillis(validity.getValue());
    }

    /** Whether {@code name} is held by anyone (a quorum holds its key under one token). */
    public boolean isLocked(String name) {
        byte[] n = Native.cString("name", Args.name(name));
        ByteByReference out = new ByteByReference();
        handle.check(m -> Native.LIB.fl_manager_is_locked(m, n, out));
        return out.getValue() != 0;
    }

    /** How long {@code name} stays held at least, or empty when it is free. */
    public Optional<Duration> remaining(String name) {
        byte[] n = Native.cString("name", Args.name(name));
        LongByReference out = new LongByReference();
        handle.check(m -> Native.LIB.fl_manager_remaining_ms(m, n, out));
        long ms = out.getValue();
        return ms < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(ms));
    }

    /**
     * Who holds {@code name} now, or empty when it is free: how long it stays held at least,
     * and the label, since when and fencing token its holder noted (a manager built with
     * {@link Builder#holder(String)}). Acquires nothing; the token is never shown.
     *
     * @throws UnavailableException when too few servers answered
     */
    public Optional<Holder> holder(String name) {
        byte[] n = Native.cString("name", Args.name(name));
        Native.HolderInfo out = new Native.HolderInfo();
        handle.check(m -> Native.LIB.fl_manager_holder(m, n, out));
        return out.held == 0 ? Optional.empty() : Optional.of(Holder.of(out));
    }

    /**
     * A counting semaphore on {@code name}: at most {@code limit} permits held at any instant,
     * across every process and language using the name. Nothing is contacted.
     */
    public FencedSemaphore semaphore(String name, int limit) {
        byte[] n = Native.cString("name", Args.name(name));
        if (limit < 0) { // an int crosses as unsigned: say it as given
            throw new InvalidArgumentException("a semaphore's limit must be at least 1, got " + limit);
        }
        PointerByReference out = new PointerByReference();
        handle.check(m -> Native.LIB.fl_semaphore_new(m, n, limit, out));
        return new FencedSemaphore(out.getValue(), name, limit);
    }

    /**
     * A leader election on {@code name}: candidates campaign in line, the leader's value is
     * read and followed. Nothing is contacted.
     */
    public LeaderElection election(String name) {
        byte[] n = Native.cString("name", Args.name(name));
        PointerByReference out = new PointerByReference();
        handle.check(m -> Native.LIB.fl_election_new(m, n, out));
        return new LeaderElection(out.getValue(), name);
    }

    /** A fair read-write lock on {@code name}: many readers or one writer. Nothing is contacted. */
    public FencedReadWriteLock readWriteLock(String name) {
        byte[] n = Native.cString("name", Args.name(name));
        PointerByReference out = new PointerByReference();
        handle.check(m -> Native.LIB.fl_rwlock_new(m, n, out));
        return new FencedReadWriteLock(out.getValue(), name);
    }

    /**
     * A {@link java.util.concurrent.locks.Lock} view of {@code name}, each hold lasting
     * {@code ttl} (see {@link DistributedLock} for what differs from a JVM lock).
     */
    public DistributedLock lockView(String name, Duration ttl) {
        return new DistributedLock(this, name, ttl);
    }

    /**
     * {@link #acquire(String, Duration, Duration)} on a thread of the manager's, for services
     * that must not block: the future completes with the lock or the exception.
     * {@code cancel(true)} on the future gives the wait up (the thread is interrupted).
     */
    public CompletableFuture<FencedLock> acquireAsync(String name, Duration ttl, Duration wait) {
        Args.name(name);
        Args.ttl(ttl);
        Args.waitLimit(wait);
        return Async.run(() -> acquire(name, ttl, wait));
    }

    /** Frees the manager (no server is waited for). Locks it made stay usable. Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /** Options of a manager; {@link #build()} checks them all and names the bad one. */
    public static final class Builder {
        private final List<String> urls;
        private String keyPrefix;
        private Duration retryDelay;
        private Duration retryJitter;
        private Double driftFactor;
        private Duration serverTimeout;
        private Duration connectTimeout;
        private Integer refusedAttempts;
        private Integer ackReplicas;
        private Duration ackTimeout;
        private String password;
        private Path tlsCaFile;
        private String tlsCaPem;
        private Path tlsCert;
        private Path tlsKey;
        private boolean tlsInsecure;
        private final List<String> metricNames = new java.util.ArrayList<>();
        private boolean holder;
        private String holderLabel;

        private Builder(List<String> urls) {
            this.urls = urls;
        }

        /** Put before every lock name to make its Redis key. */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = Objects.requireNonNull(prefix, "prefix");
            return this;
        }

        /** How long a refused attempt waits before the next (default 200 ms). */
        public Builder retryDelay(Duration delay) {
            this.retryDelay = Objects.requireNonNull(delay, "retryDelay");
            return this;
        }

        /** Random extra wait added to each retry delay (default half the retry delay). */
        public Builder retryJitter(Duration jitter) {
            this.retryJitter = Objects.requireNonNull(jitter, "retryJitter");
            return this;
        }

        /** The clock drift allowance, a fraction of the TTL (default 0.01). */
        public Builder driftFactor(double factor) {
            this.driftFactor = factor;
            return this;
        }

        /** How long one server has to answer one call (default ttl/20 within [10 ms, 1 s]). */
        public Builder serverTimeout(Duration timeout) {
            this.serverTimeout = Objects.requireNonNull(timeout, "serverTimeout");
            return this;
        }

        /** How long connecting to a server may take (default 2 s). */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = Objects.requireNonNull(timeout, "connectTimeout");
            return this;
        }

        /**
         * After how many attempts in a row on which every server refused the connection
         * (nothing listens there: a server not started, a wrong port) a wait gives up with
         * {@link UnavailableException}; default 10 (about 2 s), 0 waits through refusals. A
         * Sentinel's or a Cluster's master down during a failover is always waited through.
         */
        public Builder refusedAttempts(int attempts) {
            this.refusedAttempts = attempts;
            return this;
        }

        /** A grant counts only once {@code replicas} replicas acknowledged it within {@code timeout}. */
        public Builder replicaAck(int replicas, Duration timeout) {
            this.ackReplicas = replicas;
            this.ackTimeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /**
         * Lock names let into the {@code name} label of fencelock's measurements ({@link Metrics});
         * by default the label is empty, since names are often unbounded.
         */
        public Builder metricNames(java.util.Collection<String> names) {
            for (String n : Objects.requireNonNull(names, "names")) {
                metricNames.add(Objects.requireNonNull(n, "a metric name"));
            }
            return this;
        }

        /**
         * Leave a note next to each lock this manager acquires, saying who holds it
         * ({@code label}: 1 to 128 bytes, no control characters), since when and with which
         * fencing token, for {@link LockManager#holder(String)} and {@code fencelock status}.
         * Off by default: nothing more is written; with it each acquisition and extension
         * costs one more script call per server.
         */
        public Builder holder(String label) {
            this.holder = true;
            this.holderLabel = Objects.requireNonNull(label, "label");
            return this;
        }

        /** {@link #holder(String)} with {@code host:pid} as the label. */
        public Builder holder() {
            this.holder = true;
            this.holderLabel = null;
            return this;
        }

        /** The password of every server (instead of one in the URLs); never shown in a message. */
        public Builder password(String password) {
            this.password = Objects.requireNonNull(password, "password");
            return this;
        }

        /** Verify {@code rediss://} servers against this CA bundle (PEM file). */
        public Builder tlsCaFile(Path path) {
            this.tlsCaFile = Objects.requireNonNull(path, "path");
            return this;
        }

        /** Verify {@code rediss://} servers against this CA bundle (PEM text). */
        public Builder tlsCaPem(String pem) {
            this.tlsCaPem = Objects.requireNonNull(pem, "pem");
            return this;
        }

        /** Present this client certificate and key (PEM files) to {@code rediss://} servers. */
        public Builder tlsClientCert(Path cert, Path key) {
            this.tlsCert = Objects.requireNonNull(cert, "cert");
            this.tlsKey = Objects.requireNonNull(key, "key");
            return this;
        }

        /** Do not verify servers' certificates (tests only). */
        public Builder tlsInsecure(boolean insecure) {
            this.tlsInsecure = insecure;
            return this;
        }

        /**
         * Checks every option and makes the manager; no server is contacted.
         *
         * @throws InvalidArgumentException naming the bad URL or option (passwords masked)
         */
        public LockManager build() {
            for (int i = 0; i < urls.size(); i++) {
                Objects.requireNonNull(urls.get(i), "url " + i);
            }
            PointerByReference optsOut = new PointerByReference();
            Native.check(Native.LIB.fl_manager_options_new(optsOut));
            Pointer opts = optsOut.getValue();
            try {
                apply(opts);
                var all = Native.cStrings("url", urls);
                PointerByReference out = new PointerByReference();
                Native.check(Native.LIB.fl_manager_new(all, urls.size(), opts, out));
                return new LockManager(out.getValue());
            } finally {
                Native.LIB.fl_manager_options_free(opts);
            }
        }

        private void apply(Pointer o) {
            var lib = Native.LIB;
            if (keyPrefix != null) {
                Native.check(lib.fl_manager_options_set_key_prefix(o, Native.cString("keyPrefix", keyPrefix)));
            }
            if (retryDelay != null) {
                Native.check(lib.fl_manager_options_set_retry_delay_ms(o, Args.millis("retryDelay", retryDelay)));
            }
            if (retryJitter != null) {
                Native.check(lib.fl_manager_options_set_retry_jitter_ms(o, Args.millis("retryJitter", retryJitter)));
            }
            if (driftFactor != null) {
                Native.check(lib.fl_manager_options_set_drift_factor(o, driftFactor));
            }
            if (serverTimeout != null) {
                Native.check(lib.fl_manager_options_set_server_timeout_ms(o,
                        Args.millis("serverTimeout", serverTimeout)));
            }
            if (connectTimeout != null) {
                Native.check(lib.fl_manager_options_set_connect_timeout_ms(o,
                        Args.millis("connectTimeout", connectTimeout)));
            }
            if (refusedAttempts != null) {
                if (refusedAttempts < 0) {
                    throw new InvalidArgumentException(
                            "refusedAttempts must be 0 (never give up) or more, got " + refusedAttempts);
                }
                Native.check(lib.fl_manager_options_set_refused_attempts(o, refusedAttempts));
            }
            if (ackReplicas != null) {
                if (ackReplicas < 0) {
                    throw new InvalidArgumentException("replicaAck needs at least 1 replica, got " + ackReplicas);
                }
                Native.check(lib.fl_manager_options_set_replica_ack(o, ackReplicas,
                        Args.millis("replicaAck timeout", ackTimeout)));
            }
            if (password != null) {
                Native.check(lib.fl_manager_options_set_password(o, Native.cString("password", password)));
            }
            if (holder) {
                byte[] label = holderLabel == null ? null : Native.cString("holder label", holderLabel);
                Native.check(lib.fl_manager_options_set_holder(o, label));
            }
            for (String n : metricNames) {
                Native.check(lib.fl_manager_options_add_metric_name(o, Native.cString("metric name", n)));
            }
            if (tlsCaFile != null) {
                Native.check(lib.fl_manager_options_set_tls_ca_file(o, Native.cString("tlsCaFile", tlsCaFile.toString())));
            }
            if (tlsCaPem != null) {
                Native.check(lib.fl_manager_options_set_tls_ca_pem(o, Native.cString("tlsCaPem", tlsCaPem)));
            }
            if (tlsCert != null) {
                Native.check(lib.fl_manager_options_set_tls_client_cert_files(o,
                        Native.cString("tls cert", tlsCert.toString()), Native.cString("tls key", tlsKey.toString())));
            }
            if (tlsInsecure) {
                Native.check(lib.fl_manager_options_set_tls_insecure(o, (byte) 1));
            }
        }
    }
}
