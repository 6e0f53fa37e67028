#!/usr/bin/env bash
# Rust: formatting, lints, and the core's unit and integration tests (real redis-server).
set -euo pipefail
cd "$FENCELOCK_ROOT"
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings
cargo test --locked -p fencelock -p fencelock-testkit
# The Rust-only demonstration must keep working (short run); the cross-language one runs in
# stage 60-mixed.
ci/demo.sh --rust-only --workers 3 --rounds 3 --hold-ms 10
