package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import org.junit.jupiter.api.Test;

/**
 * Where the library comes from: the jar carries it (a JVM with nothing else on its paths loads
 * it), and a jar without one for this platform fails with an error that names the platform,
 * the file it looked for and how to point at a library built elsewhere.
 */
class NativeLoadTest {
    private static final String PROBE = "public class Probe { public static void main(String[] a) {"
            + " System.out.println(\"version \" + io.fencelock.LockManager.version()); } }";

    @Test
    void theJarCarriesTheLibraryAndAJarWithoutItNamesWhatIsMissing() throws Exception {
        String classpath = System.getProperty("fencelock.classpath");
        assertTrue(classpath != null, "test.sh sets -Dfencelock.classpath");
        Path dir = Files.createTempDirectory("fencelock-native");
        try {
            Files.writeString(dir.resolve("Probe.java"), PROBE);
            String[] parts = classpath.split(File.pathSeparator);
            Path jar = Path.of(parts[0]);
            String jna = parts[1];

            Probe loaded = probe(dir, jar + File.pathSeparator + jna);
            assertEquals(0, loaded.status, loaded.output);
            assertTrue(loaded.output.startsWith("version "), loaded.output);

            Path stripped = dir.resolve("fencelock-without-library.jar");
            copyWithout(jar, stripped, "linux-x86-64/");
            Probe missing = probe(dir, stripped + File.pathSeparator + jna);
            assertNotEquals(0, missing.status, missing.output);
            assertTrue(missing.output.contains("fencelock: no native library libfencelock.so for this platform "
                    + "(linux-x86-64)"), missing.output);
            assertTrue(missing.output.contains("-Dfencelock.library.path"), missing.output);
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private record Probe(int status, String output) {}

    /** Runs Probe.java (the source launcher) in a JVM of its own with {@code classpath} only. */
    private static Probe probe(Path dir, String classpath) throws IOException, InterruptedException {
        String jvm = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(jvm, "-cp", classpath, dir.resolve("Probe.java").toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().remove("LD_LIBRARY_PATH");
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the probe JVM did not end");
        return new Probe(p.exitValue(), output);
    }

    private static void copyWithout(Path from, Path to, String prefix) throws IOException {
        try (JarFile in = new JarFile(from.toFile()); OutputStream file = Files.newOutputStream(to);
             JarOutputStream out = new JarOutputStream(file)) {
            Enumeration<JarEntry> entries = in.entries();
            while (entries.hasMoreElements()) {
                JarEntry e = entries.nextElement();
                if (e.getName().startsWith(prefix)) {
                    continue;
                }
                out.putNextEntry(new JarEntry(e.getName()));
                try (InputStream body = in.getInputStream(e)) {
                    body.transferTo(out);
                }
                out.closeEntry();
            }
        }
    }
}
