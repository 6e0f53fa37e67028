package example;

import io.fencelock.FencedLock;
import io.fencelock.LockManager;
import java.time.Duration;

/**
 * One lock taken and released through the published jar: the native library comes from
 * inside it (no LD_LIBRARY_PATH, no Rust toolchain). Prints the fencing token and whether
 * the name is free again; exits 1 if anything is not as it should be.
 */
public final class Consumer {
    private Consumer() {}

    public static void main(String[] args) {
        try (LockManager manager = LockManager.builder(args[0]).build()) {
            long token;
            try (FencedLock lock = manager.acquire("consumer:orders", Duration.ofSeconds(10))) {
                token = lock.fencingToken();
                if (!lock.isHeld() || !manager.isLocked("consumer:orders")) {
                    throw new IllegalStateException("the lock is not held after acquire");
                }
            }
            if (manager.isLocked("consumer:orders")) {
                throw new IllegalStateException("the lock is still held after its block");
            }
            System.out.println("java consumer: acquired and released, fencing token " + token);
        }
    }
}
