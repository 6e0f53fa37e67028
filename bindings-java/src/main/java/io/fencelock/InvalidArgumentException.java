package io.fencelock;

/** Bad input, reported before any network call: a null, an empty or too long name, a TTL too short, a bad URL or option (the message names it; passwords masked). */
public final class InvalidArgumentException extends FencelockException {
    private static final long serialVersionUID = 1L;

    InvalidArgumentException(String message) {
        super(Kind.INVALID_ARGUMENT, message);
    }
}
