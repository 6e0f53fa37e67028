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
failed=()
for stage in "${stages[@]}"; do
  file=$(ls ci/stages/*"$stage".sh 2>/dev/null | head -n 1)
  [ -n "$file" ] || { echo "no such stage: $stage" >&2; exit 2; }
  echo
  echo "=== stage: $(basename "$file" .sh) ==="
  start=$(date +%s)
  if bash "$file" 2>&1 | tee "$logs/$(basename "$file" .sh).log"; then
    echo "=== stage $(basename "$file" .sh): ok in $(( $(date +%s) - start )) s ==="
  else
    echo "=== stage $(basename "$file" .sh): FAILED in $(( $(date +%s) - start )) s ==="
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
