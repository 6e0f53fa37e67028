#!/usr/bin/env bash
# Python: build the fencelock wheel with maturin (debug profile: fast, and enough for tests),
# install THE WHEEL into a fresh virtualenv, then run the pytest suite (which also runs
# examples/python) against the installed package, mypy --strict over the package and the
# examples, mypy.stubtest of the stubs against the compiled module, and redis-py's own lock
# tests against the drop-in fencelock.compat.redis_py (pytest-asyncio and packaging are theirs),
# and python-redis-lock's own tests against fencelock.compat.python_redis_lock beside the
# library itself (pytest-xdist, process-tests, gevent, eventlet and valkey are theirs);
# prometheus-client and OpenTelemetry's SDK for fencelock.metrics' exporters (test_metrics.py);
# promql-parser and PyYAML to validate docs/observability/ (test_observability_files.py).
set -euo pipefail
cd "$FENCELOCK_ROOT"

PYTHON="${PYTHON:-python3}"
venv="$PWD/target/venv-ci-python"
wheels="$PWD/target/wheels-ci-python"

rm -rf "$venv" "$wheels"
"$PYTHON" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check \
  "maturin==1.16.0" "pytest==9.2.0" "pytest-timeout==2.4.0" "mypy==2.4.1" "redis==8.1.0" \
  "pytest-asyncio==1.5.0" "packaging==26.4" \
  "prometheus-client==0.26.0" "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2" \
  "promql-parser==0.12.0" "PyYAML==6.0.4" \
  "python-redis-lock==4.0.1" "pytest-xdist==3.8.0" "process-tests==3.0.0" "gevent==26.9.0" \
  "eventlet==0.41.3" "valkey==6.2.0"

(cd bindings-python && "$venv/bin/maturin" build --locked --out "$wheels")
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$wheels"/fencelock-*.whl

# The tests must exercise the installed wheel, not the source tree.
installed=$(cd /tmp && "$venv/bin/python" -c 'import fencelock._native as n; print(n.__file__)')
case "$installed" in
  "$venv"/*) echo "testing the installed wheel: $installed" ;;
  *) echo "fencelock imported from $installed, not from the virtualenv" >&2; exit 1 ;;
esac

echo "--- mypy --strict (package + examples)"
(cd /tmp && "$venv/bin/mypy" --strict --no-incremental -p fencelock)
(cd /tmp && "$venv/bin/mypy" --strict --no-incremental "$FENCELOCK_ROOT/examples/python")
echo "--- mypy.stubtest"
(cd /tmp && "$venv/bin/python" -m mypy.stubtest fencelock)

echo "--- pytest"
# pytest-asyncio is only for redis-py's suite below; fencelock's own tests drive asyncio themselves.
# Three test processes at once (pytest-xdist, installed for python-redis-lock's suite): each
# test starts what it needs on free ports and mostly waits on the servers; 120 s in one
# process, 58 s in three on this two-core machine.
(cd bindings-python && FENCELOCK_EXAMPLES="$FENCELOCK_ROOT/examples/python" \
  "$venv/bin/pytest" -p no:cacheprovider -p no:asyncio -q -n 3 tests)

echo "--- redis-py 8.1.0's lock tests against fencelock.compat.redis_py (only the import changed)"
bindings-python/tests/redis_py_suite/run.sh "$venv/bin/python" "$PWD/target/redis-py-suite"

echo "--- python-redis-lock 4.0.1's tests against fencelock.compat.python_redis_lock (not a line changed), beside the library itself"
# Its fixture starts a valkey-server per test (ci/servers.sh: Valkey 8.1, pinned by SHA-256).
valkey=$(ci/servers.sh valkey-8.1 | awk '{print $2}')
bindings-python/tests/python_redis_lock_suite/run.sh "$venv/bin/python" \
  "$PWD/target/python-redis-lock-suite" "$(dirname "$valkey")"
