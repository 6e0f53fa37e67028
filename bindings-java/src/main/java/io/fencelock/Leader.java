package io.fencelock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * An election's leader, as {@link LeaderElection#leader()} and {@link LeaderElection.Observation}
 * read it.
 *
 * @param value the value it proclaimed
 * @param fencingToken its term number: larger than every earlier term's
 * @param since when its term began, by its clock
 * @param remaining how long its term lasts at least without another extension
 */
public record Leader(String value, long fencingToken, Instant since, Duration remaining) {
    /** The leader an {@code fl_leader} describes; empty when nobody leads. */
    static Optional<Leader> of(Native.LeaderInfo l) {
        if (l.leads == 0) {
            return Optional.empty();
        }
        int len = (int) Math.min(l.valueLen, l.value.length - 1);
        return Optional.of(new Leader(new String(l.value, 0, len, StandardCharsets.UTF_8), l.fencingToken,
                Instant.ofEpochMilli(l.sinceMs), Duration.ofMillis(l.remainingMs)));
    }
}
