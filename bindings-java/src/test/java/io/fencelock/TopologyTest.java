package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The servers a Java service meets besides one plain redis-server, each real and started here
 * on free loopback ports, stopped by PID: a Redis Cluster of three masters, a Sentinel watching
 * its master, and TLS (server-verified, and with a client certificate) with a password.
 */
class TopologyTest {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final Duration NO_WAIT = Duration.ZERO;

    @Test
    void aClusterLocksExtendsReleasesAndFencesPerName() throws Exception {
        List<RedisServer> nodes = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                // Each node's cluster bus on a free port of its own: by default it is the
                // node's port + 10000, which is past 65535 for many free ports.
                nodes.add(RedisServer.start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", "5000", "--cluster-port", Integer.toString(RedisServer.freePort())));
            }
            createCluster(nodes);
            String url = "redis+cluster://127.0.0.1:" + nodes.get(0).port + ",127.0.0.1:" + nodes.get(1).port;
            try (LockManager a = LockManager.create(url); LockManager b = LockManager.create(url)) {
                for (String name : List.of("orders", "{tag}invoices", "shipments{", "}{refunds")) {
                    long first;
                    try (FencedLock lock = a.acquire(name, TTL)) {
                        first = lock.fencingToken();
                        assertTrue(b.tryAcquire(name, TTL).isEmpty(), name + " taken twice on the cluster");
                        assertTrue(b.isLocked(name));
                        lock.extend(Duration.ofSeconds(30));
                        assertTrue(b.remaining(name).orElseThrow().compareTo(TTL) > 0);
                    }
                    assertFalse(b.isLocked(name), name + " still held after its block");
                    try (FencedLock again = b.acquire(name, TTL)) {
                        assertTrue(again.fencingToken() > first, "fencing token did not increase for " + name);
                    }
                }
                FencedSemaphore pool = a.semaphore("pool", 2);
                try (FencedLock one = pool.acquire(TTL, NO_WAIT); FencedLock two = pool.acquire(TTL, NO_WAIT)) {
                    assertThrows(NotAcquiredException.class, () -> b.semaphore("pool", 2).acquire(TTL, NO_WAIT));
                    assertTrue(one.isHeld() && two.isHeld());
                }
            }
        } finally {
            for (RedisServer n : nodes) {
                n.close();
            }
        }
    }

    @Test
    void aSentinelNamesTheMasterTheLockIsTakenOn() throws Exception {
        try (RedisServer master = RedisServer.start(); RedisServer sentinel = RedisServer.sentinel(master.port)) {
            String url = "redis+sentinel://127.0.0.1:" + sentinel.port + "/mymaster";
            try (LockManager manager = LockManager.create(url)) {
                try (FencedLock lock = manager.acquire("sentinel-orders", TTL)) {
                    assertEquals(lock.token(), master.command("GET", "sentinel-orders"),
                            "the key is not on the master the sentinel names");
                }
                assertEquals(null, master.command("GET", "sentinel-orders"));
            }
        }
    }

    @Test
    void tlsWithAPasswordVerifiesTheServerAndCanPresentAClientCertificate() throws Exception {
        Path certs = Files.createTempDirectory("fencelock-java-tls");
        try {
            makeCerts(certs);
            int tlsPort = RedisServer.freePort();
            int mtlsPort = RedisServer.freePort();
            String password = "java-tls-s3cret";
            try (RedisServer tls = tlsServer(certs, tlsPort, false, password);
                 RedisServer mtls = tlsServer(certs, mtlsPort, true, password)) {
                LockManager.Builder verified = LockManager.builder("rediss://127.0.0.1:" + tlsPort)
                        .tlsCaFile(certs.resolve("ca.crt")).password(password);
                try (LockManager manager = verified.build(); FencedLock lock = manager.acquire("tls-orders", TTL)) {
                    assertEquals(lock.token(), tls.commandAuthed(password, "GET", "tls-orders"));
                }
                // A CA nobody signed the server's certificate with: refused, and the password
                // is in no message.
                LockManager.Builder untrusted = LockManager.builder("rediss://127.0.0.1:" + tlsPort)
                        .tlsCaFile(certs.resolve("other-ca.crt")).password(password)
                        .connectTimeout(Duration.ofSeconds(2));
                FencelockException e = assertThrows(FencelockException.class, () -> {
                    try (LockManager m = untrusted.build()) {
                        m.acquire("tls-orders", TTL, NO_WAIT).close();
                    }
                });
                assertFalse(String.valueOf(e.getMessage()).contains(password), e.getMessage());
                // Mutual TLS: with the client certificate the lock is taken; without it, not.
                LockManager.Builder withCert = LockManager.builder("rediss://127.0.0.1:" + mtlsPort)
                        .tlsCaFile(certs.resolve("ca.crt")).password(password)
                        .tlsClientCert(certs.resolve("client.crt"), certs.resolve("client.key"));
                try (LockManager manager = withCert.build(); FencedLock lock = manager.acquire("mtls-orders", TTL)) {
                    assertEquals(lock.token(), mtls.commandAuthed(password, "GET", "mtls-orders"));
                }
                LockManager.Builder noCert = LockManager.builder("rediss://127.0.0.1:" + mtlsPort)
                        .tlsCaFile(certs.resolve("ca.crt")).password(password)
                        .connectTimeout(Duration.ofSeconds(2));
                assertThrows(FencelockException.class, () -> {
                    try (LockManager m = noCert.build()) {
                        m.acquire("mtls-orders-2", TTL, NO_WAIT).close();
                    }
                });
            }
        } finally {
            try (var files = Files.walk(certs)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static RedisServer tlsServer(Path certs, int tlsPort, boolean clientCerts, String password)
            throws IOException {
        return RedisServer.start("--tls-port", Integer.toString(tlsPort),
                "--tls-cert-file", certs.resolve("server.crt").toString(),
                "--tls-key-file", certs.resolve("server.key").toString(),
                "--tls-ca-cert-file", certs.resolve("ca.crt").toString(),
                "--tls-auth-clients", clientCerts ? "yes" : "no",
                "--requirepass", password);
    }

    /** ca.crt, other-ca.crt, server.crt/key (IP 127.0.0.1), client.crt/key, by the openssl command. */
    private static void makeCerts(Path d) throws IOException, InterruptedException {
        List<String> ec = List.of("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes");
        for (String ca : List.of("ca", "other-ca")) {
            List<String> args = new ArrayList<>(List.of("req", "-x509", "-days", "2", "-subj", "/CN=fencelock java " + ca));
            args.addAll(ec);
            args.addAll(List.of("-keyout", ca + ".key", "-out", ca + ".crt"));
            openssl(d, args);
        }
        cert(d, ec, "server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
        cert(d, ec, "client", "extendedKeyUsage=clientAuth\n");
    }

    private static void cert(Path d, List<String> ec, String name, String ext) throws IOException, InterruptedException {
        Files.writeString(d.resolve(name + ".ext"), ext);
        List<String> req = new ArrayList<>(List.of("req", "-new", "-subj", "/CN=fencelock java " + name));
        req.addAll(ec);
        req.addAll(List.of("-keyout", name + ".key", "-out", name + ".csr"));
        openssl(d, req);
        openssl(d, List.of("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", name + ".crt", "-extfile", name + ".ext"));
    }

    private static void openssl(Path d, List<String> args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("openssl"));
        cmd.addAll(args);
        Process p = new ProcessBuilder(cmd).directory(d.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException("openssl " + args + ": " + out);
        }
    }

    /** Joins the nodes into a cluster of masters (redis-cli --cluster create) and waits until
     * every node says the cluster is ok. */
    private static void createCluster(List<RedisServer> nodes) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        for (RedisServer n : nodes) {
            cmd.add("127.0.0.1:" + n.port);
        }
        cmd.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException("redis-cli --cluster create: " + out);
        }
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        for (RedisServer n : nodes) {
            while (!n.command("CLUSTER", "INFO").contains("cluster_state:ok")) {
                if (Instant.now().isAfter(deadline)) {
                    throw new IOException("the cluster is not ok on port " + n.port + " after 30 s");
                }
                Thread.sleep(20);
            }
        }
    }
}
