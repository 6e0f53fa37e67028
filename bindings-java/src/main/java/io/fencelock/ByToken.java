package io.fencelock;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import java.time.Duration;
import java.util.Objects;

/** Release and extend by token through a semaphore's or read-write lock's handle. */
final class ByToken {
    private ByToken() {}

    interface Release {
        int call(Pointer handle, byte[] token);
    }

    interface Extend {
        int call(Pointer handle, byte[] token, long ttlMs, LongByReference validityMs);
    }

    static void release(Handle handle, String token, Release release) {
        byte[] t = Native.cString("token", Objects.requireNonNull(token, "token"));
        handle.check(p -> release.call(p, t));
    }

    static Duration extend(Handle handle, String token, Duration ttl, Extend extend) {
        byte[] t = Native.cString("token", Objects.requireNonNull(token, "token"));
        long ttlMs = Args.ttl(ttl);
        LongByReference validity = new LongByReference();
        handle.check(p -> extend.call(p, t, ttlMs, validity));
        return Duration.ofMillis(validity.getValue());
    }
}
