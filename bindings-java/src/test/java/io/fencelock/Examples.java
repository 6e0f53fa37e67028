package io.fencelock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.tools.ToolProvider;

/**
 * Runs a program of {@code examples/java/} as a user would: compiled by javac against the jar,
 * run in a JVM of its own with {@code FENCELOCK_URL} set (bindings-java/test.sh passes the
 * directory and the class path).
 */
final class Examples {
    private Examples() {}

    /** Compiles {@code file} and runs its class; its output's lines, after checking it exited 0. */
    static List<String> run(String file, String url) throws Exception {
        Path examples = Path.of(System.getProperty("fencelock.examples", "examples/java"));
        String classpath = System.getProperty("fencelock.classpath");
        assertTrue(classpath != null, "test.sh sets -Dfencelock.classpath");
        Path out = Files.createTempDirectory("fencelock-example");
        int compiled = ToolProvider.getSystemJavaCompiler().run(null, null, null, "-Xlint:all", "-Werror",
                "-cp", classpath, "-d", out.toString(), examples.resolve(file).toString());
        assertEquals(0, compiled, "javac " + file);
        String jvm = ProcessHandle.current().info().command().orElse("java");
        String mainClass = file.substring(0, file.length() - ".java".length());
        ProcessBuilder pb = new ProcessBuilder(jvm, "-cp", out + File.pathSeparator + classpath, mainClass)
                .redirectErrorStream(true);
        pb.environment().put("FENCELOCK_URL", url);
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), file + " did not end");
        assertEquals(0, p.exitValue(), output);
        return output.lines().toList();
    }
}
