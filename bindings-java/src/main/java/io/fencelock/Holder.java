package io.fencelock;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Who holds a lock now, as {@link LockManager#holder(String)} reads it.
 *
 * @param remaining how long a quorum still holds it at least ({@code ChronoUnit.FOREVER}'s
 *     duration for a key without expiry), as {@link LockManager#remaining(String)}
 * @param label the holder's label, when it left a note (a manager built with
 *     {@link LockManager.Builder#holder(String)})
 * @param since when it was granted the lock, by its clock, when it left a note
 * @param fencingToken its fencing token, when it left a note
 */
public record Holder(Duration remaining, Optional<String> label, Optional<Instant> since, OptionalLong fencingToken) {}
