package io.fencelock;

import com.sun.jna.Pointer;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * fencelock's measurements (docs/observability.md): every sample the Rust core records, with
 * the same names, values and labels as the other languages' exporters, handed to one listener
 * per process: acquire wait by outcome, attempts, hold time, hand-offs, extensions, losses,
 * server errors, and the locks held and callers waiting as +1/-1 changes. Forward them to
 * Micrometer, OpenTelemetry or Prometheus's Java client. Lock names appear in the {@code name}
 * label only for the names a manager lets through ({@link LockManager.Builder#metricNames}).
 */
public final class Metrics {
    private Metrics() {}

    /** How a measurement is reported. */
    public enum Instrument {
        /** A count that only grows: the value is the amount added. */
        COUNTER,
        /** A distribution: the value is one observation (seconds, or a count of attempts). */
        HISTOGRAM,
        /** A level that goes up and down: the value is a change, +1 or -1. */
        GAUGE
    }

    /**
     * One sample: the measure's name ({@code fencelock_acquire_wait_seconds}, ...), how it is
     * reported, its value and its labels in the measure's order (never a token, a password or a
     * server's address).
     */
    public record Sample(String name, Instrument instrument, double value, Map<String, String> labels) {}

    /** Kept reachable while C may call it. */
    private static Native.MetricCallback registered;

    /**
     * Hands every sample to {@code listener} from now on, replacing the listener before; {@code
     * null} removes it. When this returns, the previous listener is no longer called. The listener
     * runs on fencelock's threads and on the threads of its calls, possibly several at once: it
     * must be thread-safe and quick, and must not call fencelock; what it throws is dropped.
     */
    public static synchronized void setListener(Consumer<Sample> listener) {
        Native.MetricCallback callback = listener == null ? null
                : (name, instrument, value, names, values, count, userData) -> {
                    try {
                        listener.accept(sample(name, instrument, value, names, values, count));
                    } catch (Throwable t) {
                        // Never into C.
                    }
                };
        Native.check(Native.LIB.fl_set_metric_callback(callback, null));
        registered = callback;
    }

    private static Sample sample(Pointer name, int instrument, double value, Pointer names, Pointer values, long count) {
        Map<String, String> labels = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            labels.put(text(names.getPointer((long) i * com.sun.jna.Native.POINTER_SIZE)),
                    text(values.getPointer((long) i * com.sun.jna.Native.POINTER_SIZE)));
        }
        Instrument[] kinds = Instrument.values();
        Instrument kind = instrument >= 0 && instrument < kinds.length ? kinds[instrument] : Instrument.COUNTER;
        return new Sample(text(name), kind, value, Collections.unmodifiableMap(labels));
    }

    private static String text(Pointer p) {
        Objects.requireNonNull(p, "a string from C");
        return new String(p.getByteArray(0, (int) p.indexOf(0, (byte) 0)), StandardCharsets.UTF_8);
    }
}
