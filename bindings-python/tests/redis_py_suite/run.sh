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
mkdir -p "$work/sdist"
sdist="$work/sdist/redis-$REDIS_PY_VERSION.tar.gz"

checksum_ok() { [ -f "$sdist" ] && echo "$REDIS_PY_SDIST_SHA256  $sdist" | sha256sum --check --status; }

if ! checksum_ok; then
  rm -f "$sdist"
  # pip checks the pinned hash while downloading; the sha256sum below checks it once more.
  req="$work/sdist/requirements.txt"
  echo "redis==$REDIS_PY_VERSION --hash=sha256:$REDIS_PY_SDIST_SHA256" > "$req"
  "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r "$req" -d "$work/sdist"
fi
checksum_ok || { echo "redis-$REDIS_PY_VERSION.tar.gz: sha256 mismatch" >&2; exit 1; }

"$python" "$here/prepare.py" "$sdist" "$work/suite"

cd "$work/suite"
PYTHONPATH="$here:$here/..${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" -m pytest -p fencelock_suite -p no:cacheprovider -q -rxX \
  tests/test_lock.py tests/test_asyncio/test_lock.py "$@"
