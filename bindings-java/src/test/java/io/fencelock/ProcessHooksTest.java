package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/**
 * Issue 57 item 3: a wait that makes no progress because servers do not answer is logged (the
 * {@code io.fencelock} logger, {@code WARNING}, every 3 s), naming the lock, the server and why.
 */
class ProcessHooksTest {
    @Test
    void aWaitOnAServerThatDoesNotAnswerIsLoggedNamingIt() throws Exception {
        int port = RedisServer.freePort();
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger logger = Logger.getLogger("io.fencelock");
        logger.addHandler(capture);
        // Refusals waited through (0), as for a server that does not answer.
        try (LockManager m = LockManager.builder("redis://127.0.0.1:" + port).refusedAttempts(0).build()) {
            assertThrows(UnavailableException.class,
                    () -> m.acquire("nobody-home", Duration.ofSeconds(5), Duration.ofSeconds(4)));
        } finally {
            logger.removeHandler(capture);
        }
        List<LogRecord> ours = records.stream()
                .filter(r -> r.getMessage().contains("nobody-home")).toList();
        assertFalse(ours.isEmpty(), "no warning during a 4 s wait on a refused server: " + records);
        for (LogRecord r : ours) {
            assertTrue(r.getLevel() == Level.WARNING, r.getLevel().toString());
            assertTrue(r.getMessage().startsWith("fencelock: acquire still waiting"), r.getMessage());
            assertTrue(r.getMessage().contains("127.0.0.1:" + port), r.getMessage());
        }
    }

    /** Issue 57 item 3: nobody listening at any server ends a wait without limit, saying so. */
    @Test
    void aWaitOnAnAddressNobodyListensAtGivesUp() throws Exception {
        String url = "redis://127.0.0.1:" + RedisServer.freePort();
        try (LockManager m = LockManager.create(url)) {
            UnavailableException e = assertThrows(UnavailableException.class,
                    () -> m.acquire("nobody-listens", Duration.ofSeconds(5), null));
            assertTrue(e.getMessage().contains("refused the connection on 10 attempts in a row"), e.getMessage());
        }
        try (LockManager m = LockManager.builder(url).refusedAttempts(2).build()) {
            UnavailableException e = assertThrows(UnavailableException.class,
                    () -> m.acquire("nobody-listens", Duration.ofSeconds(5), null));
            assertTrue(e.getMessage().contains("on 2 attempts in a row"), e.getMessage());
        }
        assertThrows(InvalidArgumentException.class,
                () -> LockManager.builder(url).refusedAttempts(-1).build());
    }
}
