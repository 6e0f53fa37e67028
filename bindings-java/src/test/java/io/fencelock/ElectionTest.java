package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Leader election from Java (issue 54), on a real redis-server: a term is a FencedLock whose
 * fencing token is the term number; an observation follows each change, pushed (terms of 60 s:
 * a change seen within the 10 s bounds was pushed, not found by a timer at the term's end).
 */
class ElectionTest extends RedisTestCase {
    private static final Duration TERM = Duration.ofSeconds(60);

    @Test
    void aTermLeadsProclaimsAndResignsWhileAnObservationFollows() throws Exception {
        try (LeaderElection election = manager.election("scheduler")) {
            assertEquals(Optional.empty(), election.leader());
            LeaderElection.Observation observation = election.observe();
            List<Optional<Leader>> seen = new ArrayList<>();
            CompletableFuture<Void> following = CompletableFuture.runAsync(() -> {
                while (observation.hasNext()) {
                    Optional<Leader> leader = observation.next();
                    synchronized (seen) {
                        seen.add(leader);
                        seen.notifyAll();
                    }
                }
            });
            waitFor(seen, Optional.empty());
            long first;
            try (Term term = election.campaign("host-a:8080", TERM, null)) {
                first = term.fencingToken();
                Leader leader = election.leader().orElseThrow();
                assertEquals("host-a:8080", leader.value());
                assertEquals(first, leader.fencingToken());
                assertTrue(leader.remaining().compareTo(Duration.ZERO) > 0);
                waitFor(seen, Optional.of("host-a:8080"));
                assertTrue(election.tryCampaign("b", TERM).isEmpty(), "one leader at a time");
                term.proclaim("host-a:9090");
                assertEquals("host-a:9090", term.value());
                waitFor(seen, Optional.of("host-a:9090"));
            }
            waitFor(seen, Optional.empty());
            assertEquals(Optional.empty(), election.leader(), "the block resigned");
            try (Term next = election.tryCampaign("b", TERM).orElseThrow()) {
                assertTrue(next.fencingToken() > first, "terms grow");
            }
            observation.close();
            following.get(10, TimeUnit.SECONDS);
            assertFalse(observation.hasNext());
        }
    }

    @Test
    void onLeaderCallsBackAtEachChangeUntilClosed() throws Exception {
        try (LeaderElection election = manager.election("on-leader")) {
            List<Optional<Leader>> seen = new ArrayList<>();
            LeaderElection.Observation observation = election.onLeader(leader -> {
                synchronized (seen) {
                    seen.add(leader);
                    seen.notifyAll();
                }
            });
            waitFor(seen, Optional.empty());
            try (Term term = election.campaign("a", TERM, null)) {
                waitFor(seen, Optional.of("a"));
                term.proclaim("b");
                waitFor(seen, Optional.of("b"));
            }
            waitFor(seen, Optional.empty());
            observation.close();
            int before;
            synchronized (seen) {
                before = seen.size();
            }
            try (Term term = election.campaign("c", TERM, null)) {
                Thread.sleep(500); // closed: no report of it may come
                synchronized (seen) {
                    assertEquals(before, seen.size(), "a closed observation called back: " + seen);
                }
            }
            assertThrows(NullPointerException.class, () -> election.onLeader(null));
        }
    }

    @Test
    void runLeadsWhileItsWorkRunsAndArgumentsAreChecked() {
        try (LeaderElection election = manager.election("runner")) {
            String got = election.run("r", TERM, term -> election.leader().orElseThrow().value());
            assertEquals("r", got);
            assertEquals(Optional.empty(), election.leader());
            assertThrows(NullPointerException.class, () -> election.campaign(null, TERM, null));
            assertThrows(InvalidArgumentException.class, () -> election.campaign("v".repeat(16385), TERM, null));
            assertThrows(InvalidArgumentException.class, () -> manager.election(""));
        }
    }

    /** Waits (10 s at most: a hang) until the last report's value is {@code want}. */
    private static void waitFor(List<Optional<Leader>> seen, Optional<String> want) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        synchronized (seen) {
            while (seen.isEmpty() || !seen.get(seen.size() - 1).map(Leader::value).equals(want)) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("never saw " + want + ": " + seen);
                }
                seen.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            }
        }
    }
}
