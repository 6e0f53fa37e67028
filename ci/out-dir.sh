#!/usr/bin/env bash
# ci/out-dir.sh PROFILE: the directory where Cargo puts what it builds with PROFILE (debug or
# release): $CARGO_TARGET_DIR/PROFILE, or $CARGO_TARGET_DIR/$CARGO_BUILD_TARGET/PROFILE when a
# target is named (ci/test.sh names the host, so that every stage shares one build).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
echo "${CARGO_TARGET_DIR:-$root/target}${CARGO_BUILD_TARGET:+/$CARGO_BUILD_TARGET}/$1"
