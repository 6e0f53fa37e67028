#!/usr/bin/env bash
# Builds the Java binding (bindings-java/) and runs its JUnit 5 tests against real
# redis-servers, with the JDK and jars Debian ships (openjdk-17-jdk-headless, libjna-java,
# junit5; installed when missing, since Maven Central is not reachable here):
#
#   1. libfencelock (debug) installed into $CARGO_TARGET_DIR/java/c-prefix (make -C bindings-c
#      install; Cargo reuses what stage 40 built);
#   2. javac -Werror of src/main into classes/, with the library inside at
#      linux-x86-64/libfencelock.so, where JNA finds it on the class path (no
#      LD_LIBRARY_PATH), then fencelock.jar;
#   3. javac of src/test against the jar, and the JUnit console launcher over them.
#
# Usage: bindings-java/test.sh [JUnit console options, e.g. --select-method ...]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out="${CARGO_TARGET_DIR:-$root/target}/java"
jars=/usr/share/java
need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
[ -f "$jars/jna.jar" ] || need+=(libjna-java)
[ -f "$jars/junit-platform-console-standalone.jar" ] || need+=(junit5)
[ ${#need[@]} -eq 0 ] || ci/apt-install.sh "${need[@]}"

make -s -C bindings-c install PREFIX="$out/c-prefix" >&2
rm -rf "$out/classes" "$out/test-classes"
mkdir -p "$out/classes/linux-x86-64" "$out/test-classes"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$jars/jna.jar" -d "$out/classes" \
  $(find bindings-java/src/main/java -name '*.java')
cp -L "$out/c-prefix/lib/libfencelock.so" "$out/classes/linux-x86-64/libfencelock.so"
jar --create --file "$out/fencelock.jar" -C "$out/classes" .
javac --release 17 -Xlint:all,-try -Werror -encoding UTF-8 \
  -cp "$out/fencelock.jar:$jars/jna.jar:$jars/junit-platform-console-standalone.jar" \
  -d "$out/test-classes" $(find bindings-java/src/test/java -name '*.java')
java -Dfencelock.classpath="$out/fencelock.jar:$jars/jna.jar" -Dfencelock.examples="$root/examples/java" \
  -jar "$jars/junit-platform-console-standalone.jar" --disable-ansi-colors \
  --class-path "$out/test-classes:$out/fencelock.jar:$jars/jna.jar" \
  --disable-banner --details=tree --fail-if-no-tests \
  ${*:---scan-class-path "$out/test-classes"}
