#!/usr/bin/env bash
# Runs redis-py's own lock tests (tests/test_lock.py and tests/test_asyncio/test_lock.py of
# redis-py's sdist, pinned below and checked by sha256) against fencelock.compat.redis_py,
# with only the import line of Lock changed (prepare.py), on a redis-server the plugin
# fencelock_suite.py starts. The deliberate differences are strict expected failures.
#
# Usage: run.sh PYTHON WORK_DIR [pytest args...]
#   PYTHON: an interpreter with fencelock (the wheel), redis==8.1.0, pytest, pytest-asyncio,
#   pytest-timeout and packaging installed. WORK_DIR: where the sdist is cached and the tests
#   are laid out (e.g. target/redis-py-suite).
set -euo pipefail
REDIS_PY_VERSION=8.1.0
REDIS_PY_SDIST_SHA256=6e1a19beef9225c83efd689c7e6b7da2d5215b1f42cd13b7fc3714d0a09c7b25

python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"; work=$(cd "$2" && pwd)
shift 2
here=$(cd "$(dirname "$0")" && pwd)
sdist=$("$here/../fetch_sdist.sh" "$python" "$work/sdist" "redis==$REDIS_PY_VERSION" \
  "$REDIS_PY_SDIST_SHA256" "redis-$REDIS_PY_VERSION.tar.gz")

"$python" "$here/prepare.py" "$sdist" "$work/suite"

cd "$work/suite"
PYTHONPATH="$here:$here/..${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" -m pytest -p fencelock_suite -p no:cacheprovider -q -rxX \
  tests/test_lock.py tests/test_asyncio/test_lock.py "$@"
