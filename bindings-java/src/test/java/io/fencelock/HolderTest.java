package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Who holds a lock: {@code Builder.holder(...)} leaves a note, {@code holder(name)} reads it. */
class HolderTest extends RedisTestCase {
    @Test
    void theHolderShowsItsLabelSinceAndFencingToken() {
        try (LockManager web = LockManager.builder(redis.url()).holder("worker-7 (invoices)").build()) {
            assertEquals(Optional.empty(), manager.holder("orders"));
            Instant before = Instant.now().minusSeconds(1);
            try (FencedLock lock = web.acquire("orders", Duration.ofSeconds(30))) {
                Holder h = manager.holder("orders").orElseThrow();
                assertEquals(Optional.of("worker-7 (invoices)"), h.label());
                assertEquals(OptionalLong.of(lock.fencingToken()), h.fencingToken());
                Instant since = h.since().orElseThrow();
                assertTrue(since.isAfter(before) && !since.isAfter(Instant.now()), since.toString());
                assertTrue(h.remaining().compareTo(Duration.ofSeconds(25)) > 0, h.toString());
            }
            assertEquals(Optional.empty(), manager.holder("orders"));
        }
    }

    @Test
    void theDefaultLabelIsHostAndPidAndWithoutOneNothingIsNoted() {
        try (LockManager web = LockManager.builder(redis.url()).holder().build()) {
            try (FencedLock lock = web.acquire("jobs", Duration.ofSeconds(30))) {
                String label = manager.holder("jobs").orElseThrow().label().orElseThrow();
                assertTrue(label.endsWith(":" + ProcessHandle.current().pid()), label);
            }
        }
        try (FencedLock lock = manager.acquire("plain", Duration.ofSeconds(30))) {
            Holder h = manager.holder("plain").orElseThrow();
            assertEquals(new Holder(h.remaining(), Optional.empty(), Optional.empty(), OptionalLong.empty()), h);
        }
    }

    @Test
    void badLabelsAreRefusedBeforeAnyNetworkCall() {
        var e = assertThrows(InvalidArgumentException.class,
                () -> LockManager.builder("redis://127.0.0.1:1").holder("two\nlines").build());
        assertTrue(e.getMessage().contains("control characters"), e.getMessage());
        assertThrows(InvalidArgumentException.class,
                () -> LockManager.builder("redis://127.0.0.1:1").holder("x".repeat(129)).build());
        assertThrows(NullPointerException.class, () -> LockManager.builder("redis://127.0.0.1:1").holder(null));
    }
}
