package io.fencelock;

/** The wait limit passed while another owner held the lock (or no quorum of servers agreed). */
public final class NotAcquiredException extends FencelockException {
    private static final long serialVersionUID = 1L;

    NotAcquiredException(String message) {
        super(Kind.NOT_ACQUIRED, message);
    }
}
