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
    void aSemaphoresAndAReadWriteLocksNotedHoldersAreListed() {
        try (LockManager web = LockManager.builder(redis.url()).holder("render-a").build();
                FencedSemaphore mine = web.semaphore("render", 3);
                FencedSemaphore theirs = manager.semaphore("render", 3);
                FencedLock a = mine.acquire(Duration.ofSeconds(30), Duration.ZERO);
                FencedLock b = theirs.acquire(Duration.ofSeconds(30), Duration.ZERO)) {
            assertEquals(2, theirs.state().holders());
            var holders = theirs.holders();
            assertEquals(1, holders.size(), holders.toString());
            assertEquals(Optional.of("render-a"), holders.get(0).label());
            assertEquals(OptionalLong.of(a.fencingToken()), holders.get(0).fencingToken());
            assertTrue(b.fencingToken() > 0);
        }
        try (LockManager web = LockManager.builder(redis.url()).holder("writer-1").build();
                FencedReadWriteLock rw = web.readWriteLock("catalog");
                FencedReadWriteLock seen = manager.readWriteLock("catalog");
                FencedLock w = rw.write(Duration.ofSeconds(30), Duration.ZERO)) {
            var holders = seen.holders();
            assertEquals(1, holders.size(), holders.toString());
            assertEquals(Optional.of("writer-1"), holders.get(0).label());
            assertEquals(OptionalLong.of(w.fencingToken()), holders.get(0).fencingToken());
        }
        try (FencedSemaphore theirs = manager.semaphore("render", 3)) {
            assertEquals(java.util.List.of(), theirs.holders());
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
