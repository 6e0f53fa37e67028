#!/usr/bin/env bash
# Rust: formatting, lints, the core's unit and integration tests (real redis-server), and the
# fencelock command's (cli/). The core's Redis Cluster tests (core/tests/cluster*.rs) run in
# stage 55-cluster.
set -euo pipefail
cd "$FENCELOCK_ROOT"
cargo fmt --all -- --check
# No import circle among the modules of the crates, the model and the Python package, but
# those ci/import_cycles.py still lists as known (issue 53).
python3 ci/import_cycles.py
# docs/ARCHITECTURE.md names every module (a new file without its line there fails).
python3 ci/architecture_map.py
cargo clippy --locked --workspace --all-targets -- -D warnings
# The core without its default `observe` feature (no `metrics` recorder, no event listeners,
# neither crate compiled): linted and unit-tested that way too.
cargo clippy --locked -p fencelock --no-default-features --lib -- -D warnings
cargo test --locked -p fencelock --no-default-features --lib
# The test kit's tests and the core's in one build: alone, the kit would compile its
# dependencies with other features (no tracing, so fewer of syn's), and everything again.
targets=(--lib --test harness)
for t in core/tests/*.rs; do
  name="$(basename "$t" .rs)"
  case "$name" in cluster*) ;; *) targets+=(--test "$name") ;; esac
done
cargo test --locked -p fencelock-testkit -p fencelock "${targets[@]}"
cargo test --locked -p fencelock --doc
# The command line (cli/): its unit tests and its runs of real children against real servers.
cargo test --locked -p fencelock-cli
# The Rust-only demonstration must keep working (short run); the cross-language one runs in
# stage 60-mixed.
ci/demo.sh --rust-only --workers 3 --rounds 3 --hold-ms 10
