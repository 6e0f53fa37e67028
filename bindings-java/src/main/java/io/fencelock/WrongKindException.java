package io.fencelock;

/** The name is held as another kind than the call asks for (a lock, a semaphore, a read-write lock). */
public final class WrongKindException extends FencelockException {
    private static final long serialVersionUID = 1L;

    WrongKindException(String message) {
        super(Kind.WRONG_KIND, message);
    }
}
