#!/usr/bin/env bash
# The one test command: installs what a fresh machine lacks (redis-server), then runs every
# stage in ci/stages/ in order (Rust core first, then the bindings, then cross-language tests).
# Usage: ci/test.sh [stage-name ...]   e.g. ci/test.sh rust
set -euo pipefail
cd "$(dirname "$0")/.."
export FENCELOCK_ROOT="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR=never
# A fresh clone builds everything once: incremental compilation's bookkeeping only costs.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# Every build names the host as its target explicitly, as `napi build` always does: Cargo keeps
# a build for an explicit target apart from a plain one (target/<triple>/debug, and other
# artifact hashes), so without this the Node stage compiled the whole dependency tree again.
# Scripts find what Cargo built through ci/out-dir.sh.
CARGO_BUILD_TARGET="${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}"
export CARGO_BUILD_TARGET

ci/install-redis.sh

stages=("$@")
if [ ${#stages[@]} -eq 0 ]; then
  for f in ci/stages/*.sh; do stages+=("$(basename "$f" .sh)"); done
fi

# Each stage's output also goes to target/ci-logs/<stage>.log; a failed stage's first errors
# and last lines are printed again at the end, where a reader of the run's tail finds them.
logs="$CARGO_TARGET_DIR/ci-logs"
mkdir -p "$logs"
# A stage that hangs is stopped (with every process of its group, which `timeout` leads) after
# FENCELOCK_STAGE_TIMEOUT seconds, 25 minutes unless told: the longest stage takes under 10 on
# a fresh clone, and a hang then fails the run with the stage named, within CI's time limit,
# instead of using up that limit.
stage_limit="${FENCELOCK_STAGE_TIMEOUT:-1500}"
failed=()
for stage in "${stages[@]}"; do
  file=$(ls ci/stages/*"$stage".sh 2>/dev/null | head -n 1)
  [ -n "$file" ] || { echo "no such stage: $stage" >&2; exit 2; }
  name=$(basename "$file" .sh)
  echo
  echo "=== stage: $name ==="
  start=$(date +%s)
  rc=0
  timeout --kill-after=30 "$stage_limit" bash "$file" 2>&1 | tee "$logs/$name.log" || rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "=== stage $name: ok in $(( $(date +%s) - start )) s ==="
  else
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      echo "stage $name did not finish within $stage_limit s: stopped" | tee -a "$logs/$name.log"
    fi
    echo "=== stage $name: FAILED in $(( $(date +%s) - start )) s ==="
    failed+=("$stage")
  fi
done

echo
if [ ${#failed[@]} -gt 0 ]; then
  for stage in "${failed[@]}"; do
    log=$(ls "$logs"/*"$stage".log | head -n 1)
    echo "--- $(basename "$log" .log) failed; its first errors:"
    grep -E -m 20 'error(\[|:)|FAILED|panicked|Error:' "$log" || true
    echo "--- its last lines:"
    tail -n 30 "$log"
  done
  echo
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed: ${stages[*]}"
