import io.fencelock.FencedLock;
import io.fencelock.LockManager;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

/**
 * The Java benchmark's runner (bench/java.py): uncontended acquire + release cycles on one
 * name, one at a time, for {@code SECONDS}.
 *
 * <ul>
 *   <li>{@code ours}: the Java binding as a Java service uses it: {@code manager.acquire(name,
 *       ttl)} in a try-with-resources block that releases it;
 *   <li>{@code floor}: the least a Java lock sends for the same cycle, over a plain socket in
 *       this file (Debian has no Jedis): {@code SET name token NX PX ttl}, then the
 *       compare-and-delete script by {@code EVALSHA} (loaded once), as the write-ups' Jedis
 *       pair does.
 * </ul>
 *
 * <p>Usage: {@code java -cp fencelock.jar:jna.jar:. Cycle ours|floor URL SECONDS NAME}. Runs
 * 2,000 cycles first (not counted: the JIT and the connections), then prints one JSON object:
 * {@code {"impl": ..., "cycles": N, "seconds": S, "errors": 0}}. Exit code 2 for bad arguments,
 * 1 when a cycle fails.
 */
public final class Cycle {
    private static final int WARMUP_CYCLES = 2000;
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final String RELEASE_LUA =
            "if redis.call(\"get\",KEYS[1])==ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end";

    private Cycle() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 4 || !(args[0].equals("ours") || args[0].equals("floor"))) {
            System.err.println("usage: Cycle ours|floor URL SECONDS NAME");
            System.exit(2);
        }
        double seconds = Double.parseDouble(args[2]);
        String name = args[3];
        Runnable one;
        AutoCloseable resource;
        if (args[0].equals("ours")) {
            LockManager manager = LockManager.create(args[1]);
            one = () -> {
                try (FencedLock lock = manager.acquire(name, TTL)) {
                    if (lock.fencingToken() <= 0) throw new IllegalStateException("no fencing token");
                }
            };
            resource = manager;
        } else {
            Resp resp = new Resp(URI.create(args[1]));
            String sha = resp.call("SCRIPT", "LOAD", RELEASE_LUA);
            String ttlMs = Long.toString(TTL.toMillis());
            one = () -> {
                String token = UUID.randomUUID().toString();
                if (!"OK".equals(resp.call("SET", name, token, "NX", "PX", ttlMs))) {
                    throw new IllegalStateException("floor: SET NX refused on a free name");
                }
                if (!"1".equals(resp.call("EVALSHA", sha, "1", name, token))) {
                    throw new IllegalStateException("floor: the compare-and-delete deleted nothing");
                }
            };
            resource = resp;
        }
        for (int i = 0; i < WARMUP_CYCLES; i++) one.run();
        long cycles = 0;
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long now;
        do {
            one.run();
            cycles++;
            now = System.nanoTime();
        } while (now < end);
        try {
            resource.close();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        System.out.printf("{\"impl\": \"%s\", \"cycles\": %d, \"seconds\": %.6f, \"errors\": 0}%n",
                args[0], cycles, (now - start) / 1e9);
    }

    /** A RESP client over one socket, enough for the floor: simple, integer and bulk replies. */
    private static final class Resp implements AutoCloseable {
        private final Socket socket;
        private final OutputStream out;
        private final InputStream in;

        Resp(URI url) throws IOException {
            socket = new Socket(url.getHost(), url.getPort());
            socket.setTcpNoDelay(true);
            out = socket.getOutputStream();
            in = new BufferedInputStream(socket.getInputStream());
        }

        /** Sends one command and returns its reply as text (nil as null); an error throws. */
        String call(String... args) {
            try {
                StringBuilder b = new StringBuilder().append('*').append(args.length).append("\r\n");
                for (String a : args) {
                    byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
                    b.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
                }
                out.write(b.toString().getBytes(StandardCharsets.UTF_8));
                out.flush();
                return reply();
            } catch (IOException e) {
                throw new IllegalStateException("floor: " + e.getMessage(), e);
            }
        }

        private String reply() throws IOException {
            int kind = in.read();
            String line = line();
            switch (kind) {
                case '+':
                case ':':
                    return line;
                case '$': {
                    int n = Integer.parseInt(line);
                    if (n < 0) return null;
                    byte[] data = in.readNBytes(n + 2);
                    return new String(data, 0, n, StandardCharsets.UTF_8);
                }
                case '-':
                    throw new IllegalStateException("floor: the server replied " + line);
                default:
                    throw new IllegalStateException("floor: an unexpected reply, type " + kind);
            }
        }

        private String line() throws IOException {
            StringBuilder b = new StringBuilder();
            int c;
            while ((c = in.read()) != '\r') {
                if (c < 0) throw new IOException("the connection closed");
                b.append((char) c);
            }
            in.read();
            return b.toString();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
