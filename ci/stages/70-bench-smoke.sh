#!/usr/bin/env bash
# Benchmarks, smoke only: one tiny round of every scenario, for ours and every peer, with debug
# builds, written to target/bench/smoke/ (the committed bench/RESULTS.md comes from a full run:
# ci/bench.sh). Checks that the suite runs and writes its files; asserts no timing.
set -euo pipefail
cd "$FENCELOCK_ROOT"
ci/bench.sh --quick --smoke
