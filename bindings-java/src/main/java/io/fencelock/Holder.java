package io.fencelock;

import com.sun.jna.ptr.LongByReference;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
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
public record Holder(Duration remaining, Optional<String> label, Optional<Instant> since, OptionalLong fencingToken) {
    /** The holder an {@code fl_holder} describes ({@code held} set). */
    static Holder of(Native.HolderInfo h) {
        Duration remaining = h.remainingMs == Long.MAX_VALUE
                ? ChronoUnit.FOREVER.getDuration()
                : Duration.ofMillis(h.remainingMs);
        if (h.noted == 0) {
            return new Holder(remaining, Optional.empty(), Optional.empty(), OptionalLong.empty());
        }
        int len = 0;
        while (len < h.label.length && h.label[len] != 0) {
            len++;
        }
        return new Holder(remaining, Optional.of(new String(h.label, 0, len, StandardCharsets.UTF_8)),
                Optional.of(Instant.ofEpochMilli(h.sinceMs)), OptionalLong.of(h.fencingToken));
    }

    /** A native list call on a handle: fills {@code out} (an array of {@code capacity}, or NULL
     * and 0) and sets {@code count} to how many there are. */
    interface Lister {
        int list(com.sun.jna.Pointer handle, Native.HolderInfo out, long capacity, LongByReference count);
    }

    /** Every holder a list call gives, asking again with a larger array while the list grows. */
    static List<Holder> listed(Handle handle, Lister call) {
        LongByReference count = new LongByReference();
        handle.check(p -> call.list(p, null, 0, count));
        while (count.getValue() > 0) {
            long capacity = count.getValue();
            Native.HolderInfo[] out = (Native.HolderInfo[]) new Native.HolderInfo().toArray((int) capacity);
            handle.check(p -> call.list(p, out[0], capacity, count));
            if (count.getValue() <= capacity) {
                List<Holder> holders = new ArrayList<>();
                for (int i = 0; i < count.getValue(); i++) {
                    out[i].read();
                    holders.add(of(out[i]));
                }
                return holders;
            }
        }
        return List.of();
    }
}
