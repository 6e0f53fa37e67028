package io.fencelock;

import java.util.function.Consumer;

/**
 * This candidate's term as leader ({@link LeaderElection#campaign}): a {@link FencedLock} of
 * the election's name, auto-extended until it resigns; its fencing token is the term number.
 * {@link #close()} resigns (the next candidate in line leads at once), so
 * {@code try (Term term = election.campaign(...)) { ... }} leads for the block.
 */
public final class Term implements AutoCloseable {
    private final FencedLock lock;
    private volatile String value;

    Term(FencedLock lock, String value) {
        this.lock = lock;
        this.value = value;
    }

    /** The term's lease. */
    public FencedLock lock() {
        return lock;
    }

    /** The value this leader proclaims now. */
    public String value() {
        return value;
    }

    /** The term number: larger than every earlier term's. Pass it with the leader's writes. */
    public long fencingToken() {
        return lock.fencingToken();
    }

    /** Whether the term is known to be lost: stop acting as the leader. */
    public boolean isLost() {
        return lock.isLost();
    }

    /** Calls {@code listener} once, on a thread of the library's, if the term is lost. */
    public void onLost(Consumer<Term> listener) {
        lock.onLost(l -> listener.accept(this));
    }

    /**
     * Proclaims a new value, in the same term, pushed to every observer.
     *
     * @throws NotHeldException when the term is lost
     * @throws UnavailableException when fewer than a quorum of servers noted it
     */
    public void proclaim(String value) {
        byte[] v = Native.cString("value", Args.value(value));
        lock.handle().check(t -> Native.LIB.fl_election_proclaim(t, v));
        this.value = value;
    }

    /**
     * Resigns: the next candidate in line leads at once.
     *
     * @throws NotHeldException when the term had been lost
     */
    public void resign() {
        lock.release();
    }

    /** Resigns (as {@link FencedLock#close()} releases). Idempotent. */
    @Override
    public void close() {
        lock.close();
    }

    @Override
    public String toString() {
        return "Term(" + lock.name() + ", term " + fencingToken() + ", \"" + value + "\")";
    }
}
