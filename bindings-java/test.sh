#!/usr/bin/env bash
# Builds the Java binding (bindings-java/) and runs its JUnit 5 tests against real
# redis-servers, with the JDK and jars Debian ships (openjdk-17-jdk-headless, libjna-java,
# junit5; installed when missing, since Maven Central is not reachable here):
#
#   1-2. bindings-java/build.sh: libfencelock (debug) installed into
#      $CARGO_TARGET_DIR/java/c-prefix (Cargo reuses what stage 40 built), javac -Werror of
#      src/main with the library inside the jar (linux-x86-64/libfencelock.so), fencelock.jar;
#   3. javac of src/test against the jar, and the JUnit console launcher over them.
#
# Usage: bindings-java/test.sh [JUnit console options, e.g. --select-method ...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out="${CARGO_TARGET_DIR:-$root/target}/java"
jars=/usr/share/java
bindings-java/build.sh "$out"
rm -rf "$out/test-classes"
mkdir -p "$out/test-classes"
javac --release 17 -Xlint:all,-try -Werror -encoding UTF-8 \
  -cp "$out/fencelock.jar:$jars/jna.jar:$jars/junit-platform-console-standalone.jar" \
  -d "$out/test-classes" $(find bindings-java/src/test/java -name '*.java')
java -Dfencelock.classpath="$out/fencelock.jar:$jars/jna.jar" -Dfencelock.examples="$root/examples/java" \
  -jar "$jars/junit-platform-console-standalone.jar" --disable-ansi-colors \
  --class-path "$out/test-classes:$out/fencelock.jar:$jars/jna.jar" \
  --disable-banner --details=tree --fail-if-no-tests \
  ${*:---scan-class-path "$out/test-classes"}
