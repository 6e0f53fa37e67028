package io.fencelock;

import java.time.Duration;
import java.util.Objects;

/** Checks of a call's arguments that belong to Java (nulls, durations), before any native call. */
final class Args {
    private Args() {}

    /** A duration in whole milliseconds: not null, not negative, at most {@code Long.MAX_VALUE} ms. */
    static long millis(String what, Duration d) {
        Objects.requireNonNull(d, what);
        if (d.isNegative()) {
            throw new InvalidArgumentException(what + " must not be negative, got " + d);
        }
        try {
            return d.toMillis();
        } catch (ArithmeticException e) {
            throw new InvalidArgumentException(what + " is too long: " + d);
        }
    }

    /** A TTL in milliseconds; its minimum is the library's to check (it names it). */
    static long ttl(Duration ttl) {
        return millis("ttl", ttl);
    }

    /** A wait limit: {@code null} waits until acquired (-1), zero tries once. */
    static long waitLimit(Duration wait) {
        return wait == null ? -1 : millis("wait", wait);
    }

    static String name(String name) {
        Objects.requireNonNull(name, "name");
        return name;
    }

    /** A leader's value: any text (the core checks its length); not null. */
    static String value(String value) {
        Objects.requireNonNull(value, "value");
        return value;
    }
}
