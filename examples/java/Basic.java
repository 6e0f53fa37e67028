import io.fencelock.FencedLock;
import io.fencelock.LockManager;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * The first steps: a lock held for a block of code, its fencing token sent with every write
 * to the storage it protects, a second process's one try refused meanwhile, and the same
 * through {@code CompletableFuture}.
 *
 * <pre>
 * javac -cp fencelock.jar -d . Basic.java
 * FENCELOCK_URL=redis://127.0.0.1:6379 java -cp fencelock.jar:jna.jar:. Basic
 * </pre>
 */
public class Basic {
    /** A storage that remembers the largest fencing token it has seen and rejects smaller ones. */
    static final class FencedStore {
        private long largestToken;
        private int balance;

        synchronized boolean write(long fencingToken, int delta) {
            if (fencingToken < largestToken) {
                return false; // a holder whose lock expired meanwhile: its write is stale
            }
            largestToken = fencingToken;
            balance += delta;
            return true;
        }

        synchronized int balance() {
            return balance;
        }
    }

    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("FENCELOCK_URL", "redis://127.0.0.1:6379");
        FencedStore store = new FencedStore();
        try (LockManager manager = LockManager.builder(url).keyPrefix("example:").build();
                LockManager otherProcess = LockManager.builder(url).keyPrefix("example:").build()) {
            long first;
            // Waits at most 5 s for the lock; released at the end of the block.
            try (FencedLock lock = manager.acquire("account:7", Duration.ofSeconds(30), Duration.ofSeconds(5))) {
                first = lock.fencingToken();
                System.out.printf("holding %s: write accepted=%b%n", lock.name(), store.write(first, 100));
                System.out.printf("another process's one try while held: acquired=%b%n",
                        otherProcess.tryAcquire("account:7", Duration.ofSeconds(30)).isPresent());
            }
            System.out.printf("after the block: locked=%b%n", manager.isLocked("account:7"));

            try (FencedLock lock = otherProcess.acquire("account:7", Duration.ofSeconds(30))) {
                System.out.printf("the next holder's token is larger: %b%n", lock.fencingToken() > first);
                System.out.printf("its write accepted=%b%n", store.write(lock.fencingToken(), -30));
                System.out.printf("a stale write with the first token accepted=%b%n", store.write(first, -1000));
            }
            System.out.printf("balance: %d%n", store.balance());

            // Non-blocking services: the wait happens on the library's threads.
            CompletableFuture<Long> token = manager.acquireAsync("account:7", Duration.ofSeconds(30), Duration.ofSeconds(5))
                    .thenCompose(lock -> lock.releaseAsync().thenApply(done -> lock.fencingToken()));
            System.out.printf("acquired and released asynchronously, token larger again: %b%n", token.get() > first);
        }
    }
}
