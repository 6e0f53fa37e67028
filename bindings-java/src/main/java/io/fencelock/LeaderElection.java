package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.function.Function;

/**
 * A leader election on one name: candidates {@link #campaign} in line, first come, first
 * served; the leader's {@link Term} is a {@link FencedLock} of the name, auto-extended, whose
 * fencing token is the term number; everyone reads the leader ({@link #leader()}) and follows
 * it ({@link #observe()}), each change pushed by the servers. Made by
 * {@link LockManager#election}; it keeps its manager's connections alive. Thread-safe;
 * {@link #close()} frees the handle (terms won through it are not affected).
 */
public final class LeaderElection implements AutoCloseable {
    /** How long one long poll of an {@link Observation} waits before it looks at its thread. */
    private static final long POLL_MS = 500;

    private final Handle handle;
    private final java.lang.ref.Cleaner.Cleanable cleanable;
    private final String name;

    LeaderElection(Pointer ptr, String name) {
        this.handle = new Handle(ptr, "election \"" + name + "\"", Native.LIB::fl_election_free);
        this.cleanable = Handle.CLEANER.register(this, handle);
        this.name = name;
    }

    public String name() {
        return name;
    }

    /**
     * Campaigns with {@code value} until this candidate leads, waiting at most {@code wait}
     * ({@code null}: as long as it takes); the term lives {@code ttl} unless extended and is
     * extended in the background. Interrupting the thread gives the wait up.
     *
     * @throws NotAcquiredException when the wait limit passed
     * @throws CancelledException when the thread was interrupted while it waited
     * @throws WrongKindException when the name is a semaphore or a read-write lock
     */
    public Term campaign(String value, Duration ttl, Duration wait) {
        byte[] v = Native.cString("value", Args.value(value));
        long ttlMs = Args.ttl(ttl);
        long waitMs = Args.waitLimit(wait);
        FencedLock lock = handle.with(e -> Native.interruptibly((interrupted, out) ->
                Native.LIB.fl_election_campaign_interruptible(e, v, ttlMs, waitMs, interrupted, null, out)));
        return new Term(lock, value);
    }

    /** One campaign attempt: empty when someone else leads (or candidates wait ahead). */
    public Optional<Term> tryCampaign(String value, Duration ttl) {
        byte[] v = Native.cString("value", Args.value(value));
        long ttlMs = Args.ttl(ttl);
        PointerByReference out = new PointerByReference();
        Optional<FencedLock> lock = handle.with(e -> Native.once(Native.LIB.fl_election_campaign(e, v, ttlMs, 0, out), out));
        return lock.map(l -> new Term(l, value));
    }

    /** The leader now, changing nothing: empty when nobody leads. */
    public Optional<Leader> leader() {
        Native.LeaderInfo out = new Native.LeaderInfo();
        handle.check(e -> Native.LIB.fl_election_leader(e, out));
        return Leader.of(out);
    }

    /**
     * Campaigns, runs {@code work} with the term while leading, resigns, and returns what it
     * returned. A thread cannot be stopped from outside: {@code work} checks
     * {@link Term#isLost()} between steps.
     *
     * @throws NotHeldException when the term was lost while {@code work} ran (its result is
     *     dropped)
     */
    public <T> T run(String value, Duration ttl, Function<Term, T> work) {
        try (Term term = campaign(value, ttl, null)) {
            T out = work.apply(term);
            if (term.isLost()) {
                throw new NotHeldException("the term of election \"" + name + "\" was lost while its work ran");
            }
            return out;
        }
    }

    /** Follows the leader: the current state first, then each change. */
    public Observation observe() {
        return new Observation();
    }

    /**
     * Calls {@code listener} with the leader now and then at each change (empty: nobody
     * leads), as client-go's {@code OnNewLeader}, from a daemon thread; returns the
     * observation, whose {@link Observation#close()} (from any thread) stops it. An exception
     * from the listener stops it too (the thread's uncaught-exception handler gets it).
     */
    public Observation onLeader(java.util.function.Consumer<Optional<Leader>> listener) {
        java.util.Objects.requireNonNull(listener, "listener");
        Observation observation = observe();
        Thread follower = new Thread(() -> {
            try (observation) {
                while (observation.hasNext()) {
                    listener.accept(observation.next());
                }
            }
        }, "fencelock-on-leader " + name);
        follower.setDaemon(true);
        follower.start();
        return observation;
    }

    /**
     * The leader, then each change (a new term, a proclaimed value, nobody leading: empty),
     * pushed by the servers: {@code hasNext()} blocks until the next report (interrupting the
     * thread throws {@link CancelledException}) and is false once {@link #close()}d, from any
     * thread. It waits in half-second chunks to look at its thread and at {@code close()};
     * between them it keeps its subscriptions and reads the servers only when something changed.
     */
    public final class Observation implements Iterator<Optional<Leader>>, AutoCloseable {
        private final Handle observer;
        private final java.lang.ref.Cleaner.Cleanable freed;
        private Native.LeaderInfo pending;
        private volatile boolean closed;

        private Observation() {
            PointerByReference out = new PointerByReference();
            handle.check(e -> Native.LIB.fl_election_observer_new(e, out));
            this.observer = new Handle(out.getValue(), "observer of election \"" + name + "\"", Native.LIB::fl_observer_free);
            this.freed = Handle.CLEANER.register(this, observer);
        }

        @Override
        public boolean hasNext() {
            while (pending == null && !closed) {
                if (Thread.currentThread().isInterrupted()) {
                    throw new CancelledException("the observation of election \"" + name + "\" was interrupted");
                }
                Native.LeaderInfo out = new Native.LeaderInfo();
                com.sun.jna.ptr.ByteByReference reported = new com.sun.jna.ptr.ByteByReference();
                try {
                    observer.check(o -> Native.LIB.fl_observer_next(o, POLL_MS, out, reported));
                } catch (InvalidArgumentException e) {
                    if (closed) {
                        break; // closed (and freed) meanwhile
                    }
                    throw e;
                }
                if (reported.getValue() != 0) {
                    pending = out;
                }
            }
            return pending != null;
        }

        @Override
        public Optional<Leader> next() {
            if (!hasNext()) {
                throw new NoSuchElementException("the observation of election \"" + name + "\" is closed");
            }
            Native.LeaderInfo report = pending;
            pending = null;
            return Leader.of(report);
        }

        /**
         * Ends the observation and frees its native observer, after the chunk a thread blocked
         * in {@code hasNext()} waits in (half a second at most). Idempotent.
         */
        @Override
        public void close() {
            closed = true;
            freed.clean();
        }
    }

    /** Frees the handle; terms won through it are not affected. Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "LeaderElection(\"" + name + "\")";
    }
}
