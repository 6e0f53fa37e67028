import io.fencelock.FencedLock;
import io.fencelock.LockManager;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A job that runs longer than its lock's TTL: {@code autoExtend} keeps the lock alive in the
 * background (for at most {@code maxHold}), and the job checks {@code isLost()} between steps
 * so that it stops writing as soon as the lock could not be kept. {@code onLost} tells another
 * thread at once; here the lock is lost on purpose at the end (its key deleted behind its
 * back, as an operator or a failover might) to show it.
 *
 * <pre>
 * javac -cp fencelock.jar -d . LongJob.java
 * FENCELOCK_URL=redis://127.0.0.1:6379 java -cp fencelock.jar:jna.jar:. LongJob
 * </pre>
 */
public class LongJob {
    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("FENCELOCK_URL", "redis://127.0.0.1:6379");
        try (LockManager manager = LockManager.builder(url).keyPrefix("example:").build()) {
            Duration ttl = Duration.ofMillis(600);
            CountDownLatch lost = new CountDownLatch(1);
            try (FencedLock lock = manager.acquire("nightly-report", ttl)) {
                lock.onLost(l -> {
                    System.out.printf("onLost: %s lost (%s)%n", l.name(), l.lostReason());
                    lost.countDown();
                });
                lock.autoExtend(Duration.ofMinutes(10));
                int steps = 0;
                for (int i = 0; i < 6 && !lock.isLost(); i++) {
                    Thread.sleep(250); // 1.5 s of work in all: more than twice the TTL
                    steps++;
                }
                System.out.printf("steps done: %d of 6, still held: %b%n", steps, lock.isHeld());

                // Lose it on purpose: the release-by-token another process could send.
                manager.releaseByToken(lock.name(), lock.token());
                System.out.printf("the listener was told within 10 s: %b%n", lost.await(10, TimeUnit.SECONDS));
                System.out.printf("isLost: %b%n", lock.isLost());
            } catch (io.fencelock.NotHeldException e) {
                // close() found it lost: whatever was done after the loss was not protected.
                System.out.println("close: not held, as expected");
            }
        }
    }
}
