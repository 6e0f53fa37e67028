#!/usr/bin/env bash
# The checked model of the protocol (issue 36, docs/SAFETY.md "The checked model"): model/ is a
# workspace of its own (stateright), built in release mode in its own target directory; its
# tests explore every interleaving within the bounds CI uses (a few minutes on two cores).
# Larger bounds by hand: cd model && cargo run --release -- --help.
# Then the model's runs for the conformance test (docs/SAFETY.md "The model held to the
# scripts"): core/src/scripts/conformance.trace (the lock), conformance/permits.trace (a
# semaphore and a read-write lock), conformance/many.trace (a lock on two names) and
# conformance/broadcast.trace (the lock on a Redis 6.2 cluster whose slot moves), which
# stage 10 replayed on a real server, must be exactly what the model writes today.
set -euo pipefail
cd "$FENCELOCK_ROOT/model"
export CARGO_TARGET_DIR="$CARGO_TARGET_DIR/model"
cargo test --locked --release
# The runs of each trace file: `traces` writes the lock's, `traces --permits` a semaphore's
# and a read-write lock's, `traces --many` a lock's on two names, `traces --broadcast` the lock's
# on a Redis 6.2 cluster.
check_trace() {
  local committed=$1 flag=$2 written
  written="$CARGO_TARGET_DIR/$(basename "$committed")"
  # shellcheck disable=SC2086
  cargo run --locked --release --quiet -- traces $flag > "$written"
  if ! cmp -s "$written" "../$committed"; then
    echo "15-model: the model's runs differ from $committed, which the conformance test" >&2
    echo "replays. Write them again and replay them:" >&2
    echo "  cd model && cargo run --release -- traces $flag > ../$committed" >&2
    echo "  cargo test -p fencelock --lib scripts::conformance" >&2
    diff "$written" "../$committed" | head -20 >&2
    exit 1
  fi
  echo "15-model: $committed is the model's ($(grep -c -- ' -> ' "$written") script calls)"
}
check_trace core/src/scripts/conformance.trace ""
check_trace core/src/scripts/conformance/permits.trace --permits
check_trace core/src/scripts/conformance/many.trace --many
check_trace core/src/scripts/conformance/broadcast.trace --broadcast
