#!/usr/bin/env bash
# The main demonstration: three local redis-server processes, worker processes in Rust,
# Python, Node, C, Java and Go (two of each) contending for one lock through Redlock, one server
# killed in the middle, kept down longer than the TTL and restarted; prints the timeline of
# holders (with their language) and fencing tokens, and the history checker's verdict (exit
# status 1 on any violation).
#
#   ci/demo.sh [--seconds N] [--per-language N] [--hold-ms N] [--ttl-ms N] [--quiet]
#   ci/demo.sh --rust-only [--workers N] [--rounds N] [--hold-ms N]   # Rust processes only
#
# It builds what it needs first (debug builds, showing Cargo's progress; the first run takes
# about four minutes on two cores, later runs seconds): the chaos
# binaries, libfencelock installed into target/mixed/c-prefix, the Node addon, a virtualenv
# with the Python wheel, and the Java jar with its worker (tests/chaos/workers/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# One build of the core and its dependencies for every face: the host named as the target, as
# `napi build` always names it (ci/test.sh does the same), so that Cargo shares the Rust,
# C, Node and Python builds' artifacts; no incremental bookkeeping on a first build.
CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
export CARGO_BUILD_TARGET
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
out=$(ci/out-dir.sh debug)
# The demo needs the servers alone, not the test-only tools (nftables, libfaketime).
ci/install-redis.sh --servers-only
if [ "${1:-}" = --rust-only ]; then
  shift
  cargo build --quiet --locked -p fencelock --example demo
  exec "$out/examples/demo" "$@"
fi
echo "building the workers (Rust, C, Node, Python, Java)..."
tests/chaos/workers/build.sh
# shellcheck disable=SC1091
source target/mixed/env
exec "$out/chaos-demo" "$@"
