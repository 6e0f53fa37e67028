#!/usr/bin/env bash
# The checked model of the protocol (issue 36, docs/SAFETY.md "The checked model"): model/ is a
# workspace of its own (stateright), built in release mode in its own target directory; its
# tests explore every interleaving within the bounds CI uses (a few minutes on two cores).
# Larger bounds by hand: cd model && cargo run --release -- --help.
set -euo pipefail
cd "$FENCELOCK_ROOT/model"
CARGO_TARGET_DIR="$CARGO_TARGET_DIR/model" cargo test --locked --release
