/*
 * A worker in Java for the cross-language fault tests (tests/chaos/tests/mixed.rs,
 * mixed_faults.rs, partitions.rs, soak.rs) and the demo (ci/demo.sh), on the fencelock jar
 * (bindings-java) and JNA, compiled by tests/chaos/workers/build.sh:
 *
 *   java Worker --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
 *               [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
 *               [--lease semaphore:LIMIT:COUNT | --lease rw:N | --lease election]
 *   java Worker hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
 *               [--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]
 *
 * The same protocol as worker.py, line for line (its docstring has the whole of it): one
 * `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=.. holder=..` line per hold (with the
 * lease's kind fields under --lease), `SHORT` for a lock given back unused because too little
 * validity was left, `FAIL kind=K took_ms=N`, `RFAIL kind=K`, and `DONE acquired=N failed=M`;
 * `hold` prints `ACQUIRED token=T start_us=S validity_us=V pid=P` and obeys WRITE and RELEASE
 * on stdin. Wall-clock microseconds, the clock every process on the machine shares.
 */

import io.fencelock.FencedLock;
import io.fencelock.FencelockException;
import io.fencelock.LockManager;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;

public final class Worker {
    /** Room, past the hold, that the validity must leave before the worker uses a lock. */
    private static final long SLACK_MS = 50;
    private static final PrintStream OUT = new PrintStream(System.out, true, StandardCharsets.UTF_8);

    private Worker() {}

    public static void main(String[] argv) throws Exception {
        boolean hold = argv.length > 0 && argv[0].equals("hold");
        Map<String, String> a = parse(hold ? List.of(argv).subList(1, argv.length) : List.of(argv));
        System.exit(hold ? hold(a) : contend(a));
    }

    /** `--key value` pairs; `--auto-extend` alone stands for "true". */
    private static Map<String, String> parse(List<String> args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < args.size(); i++) {
            String k = args.get(i);
            if (!k.startsWith("--")) {
                throw new IllegalArgumentException("Worker: unexpected argument " + k);
            }
            if (k.equals("--auto-extend")) {
                out.put("auto-extend", "true");
            } else if (i + 1 < args.size()) {
                out.put(k.substring(2), args.get(++i));
            } else {
                throw new IllegalArgumentException("Worker: " + k + " needs a value");
            }
        }
        return out;
    }

    private static String need(Map<String, String> a, String key) {
        String v = a.get(key);
        if (v == null) {
            throw new IllegalArgumentException("Worker: --" + key + " is required");
        }
        return v;
    }

    private static long num(Map<String, String> a, String key, long dflt) {
        return a.containsKey(key) ? Long.parseLong(a.get(key)) : dflt;
    }

    /** A comma separates URLs; a part that does not start a URL continues the previous one. */
    private static String[] servers(String value) {
        List<String> out = new ArrayList<>();
        for (String part : value.split(",")) {
            if (!out.isEmpty() && !part.contains("://")) {
                out.set(out.size() - 1, out.get(out.size() - 1) + "," + part);
            } else {
                out.add(part);
            }
        }
        return out.toArray(new String[0]);
    }

    private static LockManager manager(Map<String, String> a, long serverTimeoutMs) {
        LockManager.Builder b = LockManager.builder(servers(need(a, "servers"))).retryDelay(Duration.ofMillis(50));
        if (serverTimeoutMs > 0) {
            b.serverTimeout(Duration.ofMillis(serverTimeoutMs));
        }
        return b.build();
    }

    private static long nowUs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    private static String kind(RuntimeException e) {
        if (e instanceof FencelockException) {
            return ((FencelockException) e).kind().name().toLowerCase(java.util.Locale.ROOT);
        }
        if (e instanceof IllegalArgumentException || e instanceof NullPointerException) {
            return "invalid_argument";
        }
        return "error:" + e.getClass().getSimpleName();
    }

    /** How one round acquires under --lease: the call, and the kind fields of its HOLD line. */
    private interface Acquire {
        FencedLock call(Duration ttl, Duration wait);
    }

    /**
     * With FENCELOCK_WORKER_GATE=1: says READY once the manager is built and waits for a line
     * on stdin, so that the test starts every worker's run at the same moment.
     */
    private static void gate() {
        if (!"1".equals(System.getenv("FENCELOCK_WORKER_GATE"))) {
            return;
        }
        OUT.println("READY");
        OUT.flush();
        try {
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static int contend(Map<String, String> a) throws InterruptedException {
        String[] names = need(a, "names").split(",");
        long rounds = Long.parseLong(need(a, "rounds"));
        double holdMs = Double.parseDouble(need(a, "hold-ms"));
        String holder = need(a, "holder");
        Duration ttl = Duration.ofMillis(num(a, "ttl-ms", 1000));
        Duration wait = Duration.ofMillis(num(a, "wait-ms", 10000));
        long durationMs = num(a, "duration-ms", 0);
        String lease = a.getOrDefault("lease", "");
        CRC32 crc = new CRC32();
        crc.update(holder.getBytes(StandardCharsets.UTF_8));
        int first = (int) (crc.getValue() % names.length);
        int acquired = 0;
        int failed = 0;
        try (LockManager manager = manager(a, num(a, "server-timeout-ms", 100))) {
            gate();
            long deadline = durationMs > 0 ? System.nanoTime() + durationMs * 1_000_000L : Long.MAX_VALUE;
            for (long r = 0; r < rounds && System.nanoTime() < deadline; r++) {
                String name = names[(int) ((first + r) % names.length)];
                long t0 = System.nanoTime();
                String[] fields = {""};
                Acquire acquire = lease(manager, lease, name, r, fields);
                FencedLock lock;
                try {
                    lock = acquire.call(ttl, wait);
                } catch (RuntimeException e) {
                    failed++;
                    OUT.println("FAIL kind=" + kind(e) + " took_ms=" + (System.nanoTime() - t0) / 1_000_000);
                    Thread.sleep(5); // do not spin when servers refuse at once
                    continue;
                }
                long startUs = nowUs();
                long validityUs = lock.validity().toNanos() / 1_000;
                long fence = lock.fencingToken();
                if (validityUs < (holdMs + SLACK_MS) * 1000) {
                    OUT.println("SHORT name=" + name + " validity_us=" + validityUs + " holder=" + holder);
                    release(lock);
                    continue;
                }
                if (holdMs > 0) {
                    Thread.sleep((long) holdMs, (int) ((holdMs % 1) * 1_000_000));
                }
                long endUs = nowUs();
                OUT.println("HOLD name=" + name + " token=" + fence + " start_us=" + startUs + " end_us=" + endUs
                        + " validity_us=" + validityUs + " holder=" + holder + fields[0]);
                acquired++;
                release(lock);
            }
        }
        OUT.println("DONE acquired=" + acquired + " failed=" + failed);
        return 0;
    }

    private static Acquire lease(LockManager manager, String lease, String name, long round, String[] fields) {
        if (lease.startsWith("semaphore:")) {
            String[] p = lease.split(":");
            int limit = Integer.parseInt(p[1]);
            int count = Integer.parseInt(p[2]);
            fields[0] = " kind=semaphore count=" + count + " limit=" + limit;
            return (ttl, wait) -> manager.semaphore(name, limit).acquire(count, ttl, wait);
        }
        if (lease.startsWith("rw:")) {
            boolean write = round % Long.parseLong(lease.substring(3)) == 0;
            fields[0] = write ? " kind=write" : " kind=read";
            return (ttl, wait) -> write ? manager.readWriteLock(name).write(ttl, wait)
                    : manager.readWriteLock(name).read(ttl, wait);
        }
        if (lease.equals("election")) {
            String value = "java-" + ProcessHandle.current().pid();
            return (ttl, wait) -> {
                try (var election = manager.election(name)) {
                    return election.campaign(value, ttl, wait).lock();
                }
            };
        }
        return (ttl, wait) -> manager.acquire(name, ttl, wait);
    }

    private static void release(FencedLock lock) {
        try {
            lock.release();
        } catch (RuntimeException e) {
            OUT.println("RFAIL kind=" + kind(e));
        }
    }

    private static int hold(Map<String, String> a) throws IOException {
        String name = need(a, "name");
        Duration ttl = Duration.ofMillis(num(a, "ttl-ms", 1000));
        Duration wait = Duration.ofMillis(num(a, "wait-ms", 10000));
        String store = a.get("store");
        String resource = a.getOrDefault("resource", "resource");
        String value = a.getOrDefault("value", "");
        try (LockManager manager = manager(a, num(a, "server-timeout-ms", 0))) {
            FencedLock lock;
            try {
                lock = manager.acquire(name, ttl, wait);
                if (a.containsKey("auto-extend")) {
                    lock.autoExtend(Duration.ofHours(1));
                }
            } catch (RuntimeException e) {
                OUT.println("ERROR kind=" + kind(e) + " message=" + e.getMessage());
                return 2;
            }
            OUT.println("ACQUIRED token=" + lock.fencingToken() + " start_us=" + nowUs() + " validity_us="
                    + lock.validity().toNanos() / 1_000 + " pid=" + ProcessHandle.current().pid());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null) {
                String command = line.strip();
                if (command.equals("WRITE")) {
                    OUT.println(write(lock, need(a, "store"), resource, value));
                } else if (command.equals("RELEASE")) {
                    long endUs = nowUs();
                    String result = "ok";
                    try {
                        lock.release();
                    } catch (RuntimeException e) {
                        result = kind(e);
                    }
                    OUT.println("RELEASED result=" + result + " end_us=" + endUs);
                    return 0;
                } else {
                    System.err.println("Worker: unknown command " + command);
                }
            }
            lock.detach();
            return 0;
        }
    }

    /** The fenced write (fenced_write.lua, with the lock's token) and the unfenced SET. */
    private static String write(FencedLock lock, String store, String resource, String value) throws IOException {
        String lost = lock.isLost() ? "true" : "false";
        Path script = Path.of(System.getProperty("fencelock.workers", "."), "fenced_write.lua");
        String fenced;
        try {
            String accepted = call(store, "EVAL", Files.readString(script), "2", "fenced:" + resource + ":token",
                    "fenced:" + resource + ":data", Long.toString(lock.fencingToken()), value);
            fenced = "1".equals(accepted) ? "accepted" : "rejected";
        } catch (IOException e) {
            fenced = "error:" + String.valueOf(e.getMessage()).replace(' ', '_');
        }
        String unfenced;
        try {
            call(store, "SET", "unfenced:" + resource, value);
            unfenced = "written";
        } catch (IOException e) {
            unfenced = "error:" + String.valueOf(e.getMessage()).replace(' ', '_');
        }
        return "WROTE fenced=" + fenced + " unfenced=" + unfenced + " lost=" + lost + " end_us=" + nowUs();
    }

    /** One command to the redis-server at `url` (redis://HOST:PORT) on a fresh connection. */
    private static String call(String url, String... words) throws IOException {
        URI u = URI.create(url);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(u.getHost(), u.getPort()), 5000);
            s.setSoTimeout(5000);
            StringBuilder req = new StringBuilder("*" + words.length + "\r\n");
            for (String w : words) {
                req.append('$').append(w.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(w).append("\r\n");
            }
            OutputStream out = s.getOutputStream();
            out.write(req.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder line = new StringBuilder();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) {
                    throw new IOException("connection closed");
                }
                line.append((char) c);
            }
            in.read();
            char kind = line.charAt(0);
            String rest = line.substring(1);
            if (kind == '-') {
                throw new IOException(rest);
            }
            if (kind == '$') {
                int n = Integer.parseInt(rest);
                return n < 0 ? null : new String(in.readNBytes(n + 2), 0, n, StandardCharsets.UTF_8);
            }
            return rest;
        }
    }
}
