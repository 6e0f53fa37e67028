package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Metrics}: the core's samples, as the listener receives them, on a real redis-server. */
class MetricsTest extends RedisTestCase {
    private static final Duration TTL = Duration.ofSeconds(10);

    @AfterEach
    void removeListener() {
        Metrics.setListener(null);
    }

    @Test
    void theListenerGetsWaitsHoldsAndExtensionsWithTheNameLetThrough() throws Exception {
        List<Metrics.Sample> seen = new CopyOnWriteArrayList<>();
        Metrics.setListener(seen::add);
        try (LockManager m = LockManager.builder(redis.url()).metricNames(List.of("measured")).build()) {
            try (FencedLock lock = m.acquire("measured", TTL)) {
                assertTrue(m.tryAcquire("measured", TTL).isEmpty());
                lock.extend(TTL);
            }
            m.acquire("unnamed", TTL).close();
        }
        Metrics.setListener(null);
        assertTrue(has(seen, "fencelock_acquire_wait_seconds", Metrics.Instrument.HISTOGRAM,
                Map.of("kind", "mutex", "outcome", "acquired", "name", "measured")));
        assertTrue(has(seen, "fencelock_acquire_wait_seconds", Metrics.Instrument.HISTOGRAM,
                Map.of("kind", "mutex", "outcome", "not_acquired", "name", "measured")));
        assertTrue(has(seen, "fencelock_hold_seconds", Metrics.Instrument.HISTOGRAM,
                Map.of("kind", "mutex", "outcome", "released", "name", "measured")));
        assertTrue(has(seen, "fencelock_extensions_total", Metrics.Instrument.COUNTER,
                Map.of("kind", "mutex", "result", "ok", "name", "measured")));
        assertTrue(has(seen, "fencelock_acquire_wait_seconds", Metrics.Instrument.HISTOGRAM,
                Map.of("kind", "mutex", "outcome", "acquired", "name", "")));
        double held = seen.stream().filter(s -> s.name().equals("fencelock_locks_held"))
                .mapToDouble(Metrics.Sample::value).sum();
        assertEquals(0.0, held, "every lock granted was released");
        int before = seen.size();
        manager.acquire("after", TTL).close();
        assertEquals(before, seen.size(), "no sample after the listener was removed");
    }

    @Test
    void aListenerThatThrowsDoesNotReachTheLockCalls() throws Exception {
        Metrics.setListener(s -> {
            throw new IllegalStateException("boom");
        });
        manager.acquire("thrower", TTL).close();
        assertEquals("0", redis.command("EXISTS", "thrower"), "acquired and released as usual");
    }

    private static boolean has(List<Metrics.Sample> seen, String name, Metrics.Instrument kind, Map<String, String> labels) {
        return seen.stream().anyMatch(s -> s.name().equals(name) && s.instrument() == kind && s.labels().equals(labels));
    }
}
