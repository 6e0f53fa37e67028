package io.fencelock;

/** A release or extend found the lock no longer held (expired, or taken by another owner): whatever was done under it was not protected. */
public final class NotHeldException extends FencelockException {
    private static final long serialVersionUID = 1L;

    NotHeldException(String message) {
        super(Kind.NOT_HELD, message);
    }
}
