#!/usr/bin/env bash
# The soak run (issue 36, docs/SAFETY.md "The soak run"): tests/chaos/tests/soak.rs for
# --minutes N in all (a third each on a single server, a Redlock of five and a Cluster of three
# masters), workers in Rust, Python, Node, C and Java under rolling faults, ending with the history
# checker's verdict and one `SOAK ...` report line per topology. CI's stage 65-soak runs the
# two-minute version (40 s each). Needs root (network namespaces) and builds what the
# cross-language workers need (tests/chaos/workers/build.sh), as stage 60 does.
#
# Usage: ci/soak.sh [--minutes N | --seconds N]   (default 2 minutes; N in all, a third each)
# The server binary is $REDIS_SERVER_BIN when set (stage 65 runs a short soak on each server
# of ci/servers.sh too), else redis-server on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=120
case "${1:-}" in
  --minutes | --seconds)
    n=${2:?$1 needs a number}
    [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -gt 0 ] \
      || { echo "ci/soak.sh: $1 takes a whole number, not $n" >&2; exit 2; }
    if [ "$1" = --minutes ]; then seconds=$(( n * 60 )); else seconds=$n; fi
    [ "$seconds" -ge 30 ] || { echo "ci/soak.sh: at least 30 seconds (10 a topology)" >&2; exit 2; }
    ;;
  "") ;;
  *) echo "usage: ci/soak.sh [--minutes N | --seconds N]" >&2; exit 2 ;;
esac
export FENCELOCK_ROOT="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
ci/install-redis.sh
tests/chaos/workers/build.sh
# shellcheck disable=SC1091
source target/mixed/env
export FENCELOCK_MIXED_REQUIRED=1
export FENCELOCK_SOAK_SECONDS=$(( seconds / 3 ))
cargo test --locked -p fencelock-chaos --test soak -- --test-threads=1 --nocapture 2>&1 \
  | tee "$CARGO_TARGET_DIR/soak.log"
echo "--- report (also in $CARGO_TARGET_DIR/soak.log)"
grep '^SOAK\|SOAK ' "$CARGO_TARGET_DIR/soak.log" | sed 's/^.*SOAK /SOAK /'
