#!/usr/bin/env bash
# Runs python-redis-lock's own tests (tests/test_redis_lock.py of its sdist, pinned below and
# checked by sha256) twice: against python-redis-lock itself (the control) and against
# fencelock.compat.python_redis_lock, with not one line of the suite changed (prepare.py: a
# module named redis_lock beside the tests answers the suite's imports with the drop-in). The
# suite starts a valkey-server per test (VALKEY_SERVER_DIR is put first on PATH). The
# drop-in's deliberate differences are strict expected failures (fencelock_prl_suite.py).
#
# Usage: run.sh PYTHON WORK_DIR VALKEY_SERVER_DIR [pytest args...]
#   PYTHON: an interpreter with fencelock (the wheel), redis==8.1.0, python-redis-lock==4.0.1,
#   pytest, pytest-xdist, process-tests, gevent, eventlet and valkey installed.
set -euo pipefail
PRL_VERSION=4.0.1
PRL_SDIST_SHA256=57995e13dce196301138d710d4f132d667c200cd814718e081bf299d6cf11d70

python=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"; work=$(cd "$2" && pwd)
valkey=$(cd "$3" && pwd)
shift 3
here=$(cd "$(dirname "$0")" && pwd)
sdist=$("$here/../fetch_sdist.sh" "$python" "$work/sdist" "python-redis-lock==$PRL_VERSION" \
  "$PRL_SDIST_SHA256" "python_redis_lock-$PRL_VERSION.tar.gz")

"$python" "$here/prepare.py" "$sdist" "$work/suite"

# Each test has its own server on a socket of its own: the tests run 8 at a time (most of
# their time is sleeps and server shutdowns: each run takes about 45 s so on two cores, using
# 40 % of them, and 80 s 4 at a time). Left out of both runs: test_signal_expiration,
# which checks that a key set to expire in N ms is gone after sleeping exactly N ms, and fails
# for python-redis-lock itself on a loaded machine (the drop-in pushes the same signal with
# the same expiry; test_compat_python_redis_lock.py checks it).
args=(-q -p no:cacheprovider -p no:asyncio -n 8 -rxX tests/test_redis_lock.py
      --deselect tests/test_redis_lock.py::test_signal_expiration)
echo "--- control: python-redis-lock $PRL_VERSION itself"
(cd "$work/suite/control" && PATH="$valkey:$PATH" "$python" -m pytest "${args[@]}" "$@")
echo "--- the drop-in, with python-redis-lock $PRL_VERSION's tests"
(cd "$work/suite/dropin" && PATH="$valkey:$PATH" PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" -m pytest -p fencelock_prl_suite "${args[@]}" "$@")
