package io.fencelock;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads the {@code CompletableFuture} forms wait on: daemon threads (a wait never keeps
 * the JVM alive), made as needed and ended when idle. Cancelling a future with
 * {@code cancel(true)} interrupts its thread, which gives a lock's wait up; a lock acquired
 * just as its future was cancelled is released, since nobody else can.
 */
final class Async {
    private Async() {}

    private static final AtomicInteger COUNT = new AtomicInteger();
    private static final ExecutorService POOL = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fencelock-async-" + COUNT.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    static <T> CompletableFuture<T> run(Callable<T> work) {
        Interruptible<T> future = new Interruptible<>();
        future.task = POOL.submit(() -> {
            try {
                T value = work.call();
                if (!future.complete(value) && value instanceof AutoCloseable) {
                    // Acquired just as the future was cancelled: nobody will release it.
                    try {
                        ((AutoCloseable) value).close();
                    } catch (Exception e) {
                        // Lost meanwhile: nothing left to release.
                    }
                }
            } catch (Throwable t) {
                future.completeExceptionally(t);
            }
        });
        return future;
    }

    /** A future whose {@code cancel(true)} interrupts the thread working for it. */
    private static final class Interruptible<T> extends CompletableFuture<T> {
        volatile Future<?> task;

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            boolean cancelled = super.cancel(mayInterruptIfRunning);
            Future<?> t = task;
            if (cancelled && t != null) {
                t.cancel(true);
            }
            return cancelled;
        }
    }
}
