package io.fencelock;

/** The wait was given up because the waiting thread was interrupted ({@link Thread#interrupt()}); the thread's interrupt status stays set. */
public final class CancelledException extends FencelockException {
    private static final long serialVersionUID = 1L;

    CancelledException(String message) {
        super(Kind.CANCELLED, message);
    }
}
