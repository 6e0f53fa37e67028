import io.fencelock.FencedLock;
import io.fencelock.LockManager;
import io.fencelock.NotHeldException;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;

/**
 * The request-id lock of the Java write-ups (Jedis), on fencelock, across two JVMs.
 *
 * <p>The seed pattern:
 *
 * <pre>
 * boolean tryGetDistributedLock(Jedis jedis, String lockKey, String requestId, int expireTime)
 *     -&gt; "OK".equals(jedis.set(lockKey, requestId, "NX", "PX", expireTime))
 * boolean releaseDistributedLock(Jedis jedis, String lockKey, String requestId)
 *     -&gt; jedis.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del',
 *        KEYS[1]) else return 0 end", ...) == 1L
 * </pre>
 *
 * <p>Here the request id is the lock's token: {@code tryGetDistributedLock} writes it as the
 * key's value with one try (a Jedis client using the same key excludes us and we it),
 * {@code detach()} keeps only the id, as the Java code does, and
 * {@code releaseDistributedLock} deletes the key only if it still holds that id, from any
 * process. What fencelock adds: the same calls over several servers (Redlock), a fencing token
 * per acquisition, and typed errors for unreachable servers instead of {@code false}. This
 * program acquires in one JVM and releases from a second one, by request id.
 *
 * <pre>
 * javac -cp fencelock.jar -d . RequestId.java
 * FENCELOCK_URL=redis://127.0.0.1:6379 java -cp fencelock.jar:jna.jar:. RequestId
 * </pre>
 */
public class RequestId {
    static boolean tryGetDistributedLock(LockManager manager, String lockKey, String requestId, int expireTime) {
        Optional<FencedLock> lock = manager.tryAcquireWithToken(lockKey, requestId, Duration.ofMillis(expireTime));
        lock.ifPresent(FencedLock::detach); // keep only the request id: held until released by id or expired
        lock.ifPresent(FencedLock::close);
        return lock.isPresent();
    }

    static boolean releaseDistributedLock(LockManager manager, String lockKey, String requestId) {
        try {
            manager.releaseByToken(lockKey, requestId);
            return true;
        } catch (NotHeldException e) { // expired, or held under another request id
            return false;
        }
    }

    public static void main(String[] args) throws Exception {
        String url = System.getenv().getOrDefault("FENCELOCK_URL", "redis://127.0.0.1:6379");
        try (LockManager manager = LockManager.builder(url).keyPrefix("example:").build()) {
            if (args.length == 3 && args[0].equals("--release")) { // the second JVM
                System.out.printf("process 2: releaseDistributedLock(%s, %s) -> %b%n", args[1], args[2],
                        releaseDistributedLock(manager, args[1], args[2]));
                return;
            }
            String key = "order:42";
            String requestId = UUID.randomUUID().toString();
            System.out.printf("process 1: tryGetDistributedLock(%s, request id, 30000) -> %b%n", key,
                    tryGetDistributedLock(manager, key, requestId, 30_000));
            String other = UUID.randomUUID().toString();
            System.out.printf("another request: tryGetDistributedLock -> %b%n",
                    tryGetDistributedLock(manager, key, other, 30_000));
            System.out.printf("another request: releaseDistributedLock with its own id -> %b%n",
                    releaseDistributedLock(manager, key, other));
            System.out.printf("is it still locked? %b%n", manager.isLocked(key));

            // Hand the lock over: a second JVM releases it by request id.
            String java = ProcessHandle.current().info().command().orElse("java");
            Process second = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                    RequestId.class.getName(), "--release", key, requestId).inheritIO().start();
            if (second.waitFor() != 0) {
                throw new IllegalStateException("process 2 failed");
            }
            System.out.printf("after process 2: locked=%b%n", manager.isLocked(key));
            System.out.printf("process 1 releasing again -> %b%n", releaseDistributedLock(manager, key, requestId));
        }
    }
}
