#!/usr/bin/env bash
# The checked model of the protocol (issue 36, docs/SAFETY.md "The checked model"): model/ is a
# workspace of its own (stateright), built in release mode in its own target directory; its
# tests explore every interleaving within the bounds CI uses (a few minutes on two cores).
# Larger bounds by hand: cd model && cargo run --release -- --help.
# Then the model's runs for the conformance test (docs/SAFETY.md "The model held to the
# scripts"): core/src/scripts/conformance.trace, which stage 10 replayed on a real server, must
# be exactly what the model writes today.
set -euo pipefail
cd "$FENCELOCK_ROOT/model"
export CARGO_TARGET_DIR="$CARGO_TARGET_DIR/model"
cargo test --locked --release
written="$CARGO_TARGET_DIR/conformance.trace"
cargo run --locked --release --quiet -- traces > "$written"
if ! cmp -s "$written" ../core/src/scripts/conformance.trace; then
  echo "15-model: the model's runs differ from core/src/scripts/conformance.trace, which the" >&2
  echo "conformance test replays. Write them again and replay them:" >&2
  echo "  cd model && cargo run --release -- traces > ../core/src/scripts/conformance.trace" >&2
  echo "  cargo test -p fencelock --lib scripts::conformance" >&2
  diff "$written" ../core/src/scripts/conformance.trace | head -20 >&2
  exit 1
fi
echo "15-model: the conformance runs are the model's ($(grep -c -- ' -> ' "$written") script calls)"
