#!/usr/bin/env bash
# Builds the Java binding's jar for tests: libfencelock (debug) installed into OUT/c-prefix
# (make -C bindings-c install; Cargo reuses what is built), javac -Werror of src/main into
# OUT/classes with the library inside at linux-x86-64/libfencelock.so (where JNA finds it on
# the class path, no LD_LIBRARY_PATH), then OUT/fencelock.jar. Installs the JDK and Debian's
# JNA and JUnit 5 when missing (Maven Central is not reachable here). Used by
# bindings-java/test.sh and tests/chaos/workers/build.sh; the release jar is Maven's
# (bindings-java/pom.xml, ci/release.sh).
#
# Usage: bindings-java/build.sh OUT [C-PREFIX]   (C-PREFIX: a libfencelock already installed
# there is used as it is)
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bindings-java/build.sh OUT [C-PREFIX]" >&2; exit 2; }
cd "$(dirname "$0")/.."
mkdir -p "$1"
out="$(cd "$1" && pwd)"
jars=/usr/share/java
need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
[ -f "$jars/jna.jar" ] || need+=(libjna-java)
[ -f "$jars/junit-platform-console-standalone.jar" ] || need+=(junit5)
[ ${#need[@]} -eq 0 ] || ci/apt-install.sh "${need[@]}"

prefix="${2:-}"
if [ -z "$prefix" ]; then
  prefix="$out/c-prefix"
  make -s -C bindings-c install PREFIX="$prefix" >&2
fi
rm -rf "$out/classes"
mkdir -p "$out/classes/linux-x86-64"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$jars/jna.jar" -d "$out/classes" \
  $(find bindings-java/src/main/java -name '*.java')
cp -L "$prefix/lib/libfencelock.so" "$out/classes/linux-x86-64/libfencelock.so"
jar --create --file "$out/fencelock.jar" -C "$out/classes" .
