package io.fencelock;

/**
 * What the process gets once, from the first {@link LockManager}: a wait that makes no progress
 * because servers do not answer is never silent (the core's warning, every 3 s, naming the
 * lock, each server that did not answer and why, is logged at {@code WARNING} to the {@code
 * System.Logger} named {@code io.fencelock}, as Python logs it and Node emits a process
 * warning); and the JVM's shutdown waits for the managers' background clean-ups (an
 * interrupted wait's place in line given up, a lock collected while held released), at most
 * {@link #EXIT_WAIT_MS}, so that a program that exits at once leaves nothing in the queues.
 */
final class ProcessHooks {
    private ProcessHooks() {}

    /** The longest the JVM's shutdown waits for background clean-ups. */
    static final long EXIT_WAIT_MS = 5000;

    /** {@code FL_EVENT_WARN}. */
    private static final int WARN = 3;
    private static final System.Logger LOG = System.getLogger("io.fencelock");
    /** Kept reachable while C may call it. */
    private static Native.EventCallback installed;

    static synchronized void install() {
        if (installed != null) {
            return;
        }
        Native.EventCallback callback = (level, message, fields, userData) -> {
            try {
                String what = Native.string(message);
                if (what.startsWith("acquire still waiting")) {
                    LOG.log(System.Logger.Level.WARNING, "fencelock: " + what + " " + Native.string(fields));
                }
            } catch (Throwable t) {
                // Never into C.
            }
        };
        Native.check(Native.LIB.fl_set_event_callback(callback, null, WARN));
        installed = callback;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> Native.LIB.fl_settle_all(EXIT_WAIT_MS),
                "fencelock-settle"));
    }
}
