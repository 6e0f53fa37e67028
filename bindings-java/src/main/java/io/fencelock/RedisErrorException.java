package io.fencelock;

/** A server answered with an unexpected reply (for example WRONGTYPE, or a missing ACL permission). */
public final class RedisErrorException extends FencelockException {
    private static final long serialVersionUID = 1L;

    RedisErrorException(String message) {
        super(Kind.REDIS_ERROR, message);
    }
}
