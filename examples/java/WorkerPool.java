import io.fencelock.FencedLock;
import io.fencelock.FencedSemaphore;
import io.fencelock.LockManager;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * At most two jobs at once across every process: a counting semaphore of 2 shared by six
 * worker threads (they could as well be six processes or machines). Each permit is a lease with
 * its own fencing token, released at the end of its block; waiters are served first come,
 * first served.
 *
 * <pre>
 * javac -cp fencelock.jar -d . WorkerPool.java
 * FENCELOCK_URL=redis://127.0.0.1:6379 java -cp fencelock.jar:jna.jar:. WorkerPool
 * </pre>
 */
public class WorkerPool {
    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("FENCELOCK_URL", "redis://127.0.0.1:6379");
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger done = new AtomicInteger();
        Set<Long> tokens = ConcurrentHashMap.newKeySet();
        try (LockManager manager = LockManager.builder(url).keyPrefix("example:").build();
                FencedSemaphore slots = manager.semaphore("render-slots", 2)) {
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                Thread worker = new Thread(() -> {
                    try (FencedLock permit = slots.acquire(Duration.ofSeconds(30), Duration.ofSeconds(30))) {
                        most.accumulateAndGet(running.incrementAndGet(), Math::max);
                        tokens.add(permit.fencingToken());
                        Thread.sleep(100); // the job
                        running.decrementAndGet();
                        done.incrementAndGet();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                worker.start();
                workers.add(worker);
            }
            for (Thread t : workers) {
                t.join();
            }
            System.out.printf("jobs done: %d%n", done.get());
            System.out.printf("never more than 2 at once: %b%n", most.get() <= 2);
            System.out.printf("each permit had a fencing token of its own: %b%n", tokens.size() == 6);
            System.out.printf("permits held now: %d%n", slots.state().held());
        }
    }
}
