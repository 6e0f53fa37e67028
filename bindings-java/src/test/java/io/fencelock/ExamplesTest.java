package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The programs of examples/java/ (docs/java.md), each run in a JVM of its own, their output checked. */
class ExamplesTest extends RedisTestCase {
    @Test
    void basic() throws Exception {
        assertEquals(List.of(
                "holding account:7: write accepted=true",
                "another process's one try while held: acquired=false",
                "after the block: locked=false",
                "the next holder's token is larger: true",
                "its write accepted=true",
                "a stale write with the first token accepted=false",
                "balance: 70",
                "acquired and released asynchronously, token larger again: true"),
                Examples.run("Basic.java", redis.url()));
        assertNull(redis.command("GET", "example:account:7"), "every lock released");
    }

    @Test
    void longJob() throws Exception {
        assertEquals(List.of(
                "steps done: 6 of 6, still held: true",
                "onLost: nightly-report lost (EXPIRED)",
                "the listener was told within 10 s: true",
                "isLost: true",
                "close: not held, as expected"),
                Examples.run("LongJob.java", redis.url()));
    }

    @Test
    void workerPool() throws Exception {
        assertEquals(List.of("jobs done: 6", "never more than 2 at once: true",
                "each permit had a fencing token of its own: true", "permits held now: 0"),
                Examples.run("WorkerPool.java", redis.url()));
    }
}
