package io.fencelock;

/**
 * What went wrong in a fencelock call: one subclass per kind, the same kinds as in Rust,
 * Python, Node and C ({@code fl_status}). The message names the lock and the servers
 * involved, never a password or a lock's token. Unchecked, like the errors of the JDK's own
 * locks: catch the kinds you act on ({@link NotAcquiredException} after a wait limit,
 * {@link NotHeldException} when a lock was lost).
 */
public class FencelockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The kinds of failure, as {@code fl_status} numbers them. */
    public enum Kind {
        /** Bad input (a null, an empty name, a zero TTL, a bad URL or option); nothing was sent. */
        INVALID_ARGUMENT(1),
        /** The wait limit passed while another owner held the lock. */
        NOT_ACQUIRED(2),
        /** The lock was not held any more (expired or taken) when released or extended. */
        NOT_HELD(3),
        /** Too few servers answered to reach a quorum; the message names them and why. */
        UNAVAILABLE(4),
        /** A server answered with an unexpected reply (a key of another type, a missing permission). */
        REDIS_ERROR(5),
        /** The wait was given up: the thread was interrupted. */
        CANCELLED(6),
        /** A bug in fencelock, caught at the boundary. */
        INTERNAL(7),
        /** The name is held as another kind (a lock, a semaphore, a read-write lock). */
        WRONG_KIND(8),
        /** A status this binding does not know (a newer library). */
        UNKNOWN(-1);

        private final int status;

        Kind(int status) {
            this.status = status;
        }

        /** The {@code fl_status} number. */
        public int status() {
            return status;
        }
    }

    private final Kind kind;

    FencelockException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    /** What kind of failure this is. */
    public Kind kind() {
        return kind;
    }

    static FencelockException of(int status, String message) {
        switch (status) {
            case 1: return new InvalidArgumentException(message);
            case 2: return new NotAcquiredException(message);
            case 3: return new NotHeldException(message);
            case 4: return new UnavailableException(message);
            case 5: return new RedisErrorException(message);
            case 6: return new CancelledException(message);
            case 7: return new FencelockException(Kind.INTERNAL, message);
            case 8: return new WrongKindException(message);
            default: return new FencelockException(Kind.UNKNOWN, "status " + status + ": " + message);
        }
    }
}
