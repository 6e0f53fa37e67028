#!/usr/bin/env bash
# Maven as this project runs it: offline from Maven Central, with the plugins and JNA that
# Debian packages install into /usr/share/maven-repo (installed here when missing), through
# ci/maven/settings.xml, and a local repository of its own under $CARGO_TARGET_DIR (nothing
# written to ~/.m2; MAVEN_REPO_LOCAL names another). Used by ci/release.sh (the Java jars) and stage 80-dist (a consumer
# project built against a file:// repository).
#
# Usage: ci/maven.sh MAVEN-ARGUMENTS...   e.g. ci/maven.sh -f bindings-java/pom.xml package
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
repo=/usr/share/maven-repo
plugins="$repo/org/apache/maven/plugins"
need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
[ -d "$repo/net/java/dev/jna/jna/5.13.0" ] || need+=(libjna-java)
for p in compiler jar install deploy source javadoc resources; do
  [ -d "$plugins/maven-$p-plugin" ] || need+=("libmaven-$p-plugin-java")
done
[ -d "$plugins/maven-surefire-plugin" ] || need+=(libsurefire-java)
[ -d "$repo/org/codehaus/mojo/exec-maven-plugin" ] || need+=(libexec-maven-plugin-java)
[ ${#need[@]} -eq 0 ] || "$root/ci/apt-install.sh" "${need[@]}"
# (Debian's Maven writes colour codes even in batch mode; they are taken out of its output.)
mvn -B -q -s "$root/ci/maven/settings.xml" \
  -Dmaven.repo.local="${MAVEN_REPO_LOCAL:-${CARGO_TARGET_DIR:-$root/target}/m2}" "$@" \
  | sed -u 's/\x1b\[[0-9;]*m//g'

