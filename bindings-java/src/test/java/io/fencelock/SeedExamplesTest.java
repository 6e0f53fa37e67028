package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The Java write-ups this project grew from (Jedis): their request-id pair re-expressed on
 * fencelock ({@code examples/java/RequestId.java}, run in two JVMs), and their wrong variants
 * run as written, with a plain Redis client playing Jedis, failing where fencelock holds
 * (docs/PITFALLS.md 1 to 3).
 */
class SeedExamplesTest extends RedisTestCase {
    private static final String COMPARE_AND_DELETE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    /** Jedis: {@code "OK".equals(jedis.set(key, id, "NX", "PX", ms))}. */
    private boolean jedisTryGet(String key, String id, int ms) throws IOException {
        return "OK".equals(redis.command("SET", key, id, "NX", "PX", Integer.toString(ms)));
    }

    /** Waits until {@code key} is gone (expired): a wait on the server's state, bounded. */
    private void awaitExpired(String key) throws Exception {
        Instant deadline = Instant.now().plus(Duration.ofSeconds(20));
        while (!"-2".equals(redis.command("PTTL", key))) {
            assertTrue(Instant.now().isBefore(deadline), key + " never expired");
            Thread.sleep(10);
        }
    }

    @Test
    void theRequestIdExampleRunsAcrossTwoJvms() throws Exception {
        List<String> lines = Examples.run("RequestId.java", redis.url());
        String output = String.join("\n", lines);
        assertEquals("process 1: tryGetDistributedLock(order:42, request id, 30000) -> true", lines.get(0), output);
        assertEquals("another request: tryGetDistributedLock -> false", lines.get(1));
        assertEquals("another request: releaseDistributedLock with its own id -> false", lines.get(2));
        assertEquals("is it still locked? true", lines.get(3));
        assertTrue(lines.get(4).startsWith("process 2: releaseDistributedLock(order:42, "), lines.get(4));
        assertTrue(lines.get(4).endsWith(") -> true"), lines.get(4));
        assertEquals("after process 2: locked=false", lines.get(5));
        assertEquals("process 1 releasing again -> false", lines.get(6));
        assertNull(redis.command("GET", "example:order:42"));
    }

    @Test
    void theClassicSetNxLockAndFencelockExcludeEachOther() throws Exception {
        assertTrue(jedisTryGet("stock", "jedis-request", 10_000));
        assertTrue(manager.tryAcquire("stock", Duration.ofSeconds(10)).isEmpty());
        assertEquals("1", redis.command("EVAL", COMPARE_AND_DELETE, "1", "stock", "jedis-request"));
        try (FencedLock lock = manager.tryAcquire("stock", Duration.ofSeconds(10)).orElseThrow()) {
            assertTrue(!jedisTryGet("stock", "jedis-request", 10_000));
            assertEquals("0", redis.command("EVAL", COMPARE_AND_DELETE, "1", "stock", "jedis-request"));
            assertEquals(lock.token(), redis.command("GET", "stock"));
        }
    }

    /** Pitfall 1: {@code setnx} then {@code expire}; a crash between leaves a lock for ever. */
    @Test
    void setnxThenExpireWithACrashBetweenNeverExpiresAndFencelocksDoes() throws Exception {
        assertEquals("1", redis.command("SETNX", "report", "request-1"));
        // ... the process dies here, before jedis.expire(lockKey, expireTime)
        assertEquals("-1", redis.command("PTTL", "report"), "a lock that never expires");
        redis.command("DEL", "report");
        FencedLock lock = manager.acquire("report", Duration.ofMillis(500));
        lock.detach(); // the process dies holding it: nothing releases it
        assertTrue(Long.parseLong(redis.command("PTTL", "report")) > 0, "set with its expiry, atomically");
        awaitExpired("report");
        lock.close();
        try (FencedLock next = manager.tryAcquire("report", Duration.ofSeconds(5)).orElseThrow()) {
            assertEquals(next.token(), redis.command("GET", "report"));
        }
    }

    /** Pitfall 2: {@code jedis.del(lockKey)} without checking the owner. */
    @Test
    void delWithoutCheckingTheOwnerReleasesAnothersLockAndFencelockDoesNot() throws Exception {
        assertTrue(jedisTryGet("invoice", "request-a", 200));
        awaitExpired("invoice"); // A worked too long
        try (FencedLock b = manager.acquire("invoice", Duration.ofSeconds(10))) {
            redis.command("DEL", "invoice"); // A's release
            assertNull(redis.command("GET", "invoice"), "A deleted B's lock");
            assertThrows(NotHeldException.class, b::release);
        }
        FencedLock a = manager.acquire("invoice", Duration.ofMillis(200));
        awaitExpired("invoice");
        try (FencedLock b = manager.acquire("invoice", Duration.ofSeconds(10))) {
            assertThrows(NotHeldException.class, a::release, "A's release finds B's lock");
            assertEquals(b.token(), redis.command("GET", "invoice"), "and leaves it alone");
            assertTrue(b.fencingToken() > a.fencingToken());
        } finally {
            a.close();
        }
    }

    /** Pitfall 3: {@code get}, compare, then {@code del} as two steps. */
    @Test
    void getThenDelAsTwoStepsDeletesTheNextHoldersLockAndFencelockDoesNot() throws Exception {
        assertTrue(jedisTryGet("ledger", "request-a", 300));
        assertEquals("request-a", redis.command("GET", "ledger")); // "it is mine"
        awaitExpired("ledger"); // ... A pauses between the two steps
        try (FencedLock b = manager.acquire("ledger", Duration.ofSeconds(10))) {
            redis.command("DEL", "ledger");
            assertNull(redis.command("GET", "ledger"), "A deleted B's lock");
            assertThrows(NotHeldException.class, b::close);
        }
        FencedLock a = manager.acquireWithToken("ledger", "request-a", Duration.ofMillis(300), Duration.ZERO);
        a.detach();
        awaitExpired("ledger");
        try (FencedLock b = manager.acquire("ledger", Duration.ofSeconds(10))) {
            // fencelock's release is one compare-and-delete on the server.
            assertThrows(NotHeldException.class, () -> manager.releaseByToken("ledger", "request-a"));
            assertEquals(b.token(), redis.command("GET", "ledger"));
        } finally {
            a.close();
        }
    }
}
