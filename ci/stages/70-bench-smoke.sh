#!/usr/bin/env bash
# Benchmarks, smoke only: one tiny round of every scenario, for ours and every peer, with debug
# builds, written to target/bench/smoke/ (the committed bench/RESULTS.md comes from a full run:
# ci/bench.sh). Checks that the suite runs and writes its files; asserts no timing.
set -euo pipefail
cd "$FENCELOCK_ROOT"
ci/bench.sh --quick --smoke
# The server-cost measurements of bench/notes.md (issue 21), a few commands each: they start
# and stop their own redis-server and subscriber processes, and check every reply.
target/bench/venv/bin/python bench/server/script_cost.py --cycles 100 --rounds 1 > /dev/null
target/bench/venv/bin/python bench/server/wakeup_cost.py --commands 100 --rounds 1 > /dev/null
