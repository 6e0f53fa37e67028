package io.fencelock;

/** Too few servers answered to reach a quorum; the message names each server and why. */
public final class UnavailableException extends FencelockException {
    private static final long serialVersionUID = 1L;

    UnavailableException(String message) {
        super(Kind.UNAVAILABLE, message);
    }
}
