package io.fencelock;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * A real redis-server for one test: on a free loopback port (never 6379), no persistence,
 * in a directory of its own, stopped by the PID this started ({@code $REDIS_SERVER_BIN} or
 * {@code redis-server} on the PATH). {@link #command} speaks RESP for the test's own checks.
 */
final class RedisServer implements AutoCloseable {
    private final Process process;
    private final Path dir;
    final int port;

    private static final String BIN = System.getenv().getOrDefault("REDIS_SERVER_BIN", "redis-server");

    private RedisServer(int port, List<String> extra) throws IOException {
        this(port, Files.createTempDirectory("fencelock-java-redis"), null, extra);
    }

    /** A server (or, with {@code config}, a process reading that file first: a sentinel). */
    private RedisServer(int port, Path dir, Path config, List<String> extra) throws IOException {
        this.port = port;
        this.dir = dir;
        List<String> args = new ArrayList<>(List.of(BIN));
        if (config != null) {
            args.add(config.toString());
        }
        args.addAll(List.of("--port", Integer.toString(port), "--bind", "127.0.0.1", "--dir", dir.toString()));
        if (config == null) {
            args.addAll(List.of("--save", "", "--appendonly", "no"));
        }
        args.addAll(extra);
        this.process = new ProcessBuilder(args).redirectErrorStream(true)
                .redirectOutput(dir.resolve("server.log").toFile()).start();
        Instant deadline = Instant.now().plus(Duration.ofSeconds(20));
        while (true) {
            try {
                if ("PONG".equals(command("PING"))) {
                    return;
                }
            } catch (IOException e) {
                if (String.valueOf(e.getMessage()).contains("NOAUTH")) {
                    return; // up, and asking for its password
                }
                if (!process.isAlive() || Instant.now().isAfter(deadline)) {
                    String log = Files.readString(dir.resolve("server.log"));
                    close();
                    throw new IOException("redis-server on port " + port + " did not start: " + log, e);
                }
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while redis-server started", e);
            }
        }
    }

    static RedisServer start(String... extra) throws IOException {
        return new RedisServer(freePort(), List.of(extra));
    }

    /** A sentinel watching the master on {@code masterPort} as {@code mymaster} (quorum 1). */
    static RedisServer sentinel(int masterPort) throws IOException {
        Path dir = Files.createTempDirectory("fencelock-java-sentinel");
        Path config = dir.resolve("sentinel.conf");
        Files.writeString(config, "sentinel monitor mymaster 127.0.0.1 " + masterPort + " 1\n"
                + "sentinel down-after-milliseconds mymaster 5000\n");
        return new RedisServer(freePort(), dir, config, List.of("--sentinel"));
    }

    static int freePort() throws IOException {
        while (true) {
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(false);
                s.bind(new InetSocketAddress("127.0.0.1", 0));
                if (s.getLocalPort() != 6379) {
                    return s.getLocalPort();
                }
            }
        }
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    long pid() {
        return process.pid();
    }

    /** Sends one command; its reply as text (a status, a bulk string, an integer; null for nil). */
    String command(String... words) throws IOException {
        return commandAuthed(null, words);
    }

    /** The same on a connection that first authenticates with {@code password} (unless null). */
    String commandAuthed(String password, String... words) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            s.setSoTimeout(5000);
            if (password != null) {
                exchange(s, "AUTH", password);
            }
            return exchange(s, words);
        }
    }

    private static String exchange(Socket s, String... words) throws IOException {
        StringBuilder req = new StringBuilder("*" + words.length + "\r\n");
        for (String w : words) {
            req.append('$').append(w.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(w).append("\r\n");
        }
        OutputStream out = s.getOutputStream();
        out.write(req.toString().getBytes(StandardCharsets.UTF_8));
        out.flush();
        InputStream in = s.getInputStream();
        String line = readLine(in);
        switch (line.charAt(0)) {
            case '+':
            case ':':
                return line.substring(1);
            case '-':
                throw new IOException("redis error: " + line.substring(1));
            case '$': {
                int n = Integer.parseInt(line.substring(1));
                if (n < 0) {
                    return null;
                }
                byte[] body = in.readNBytes(n + 2);
                return new String(body, 0, n, StandardCharsets.UTF_8);
            }
            default:
                throw new IOException("unexpected reply " + line);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') {
                in.read();
                return b.toString();
            }
            b.append((char) c);
        }
        throw new IOException("connection closed");
    }

    /** Freezes the server (SIGSTOP) or lets it go on (SIGCONT). */
    void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IOException("kill -" + name + " " + process.pid() + " failed");
        }
    }

    @Override
    public void close() throws IOException {
        if (process.isAlive()) {
            try {
                signal("CONT");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process.destroy();
            try {
                process.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
            }
        }
        if (!Files.exists(dir)) {
            return;
        }
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
