#!/usr/bin/env bash
# Builds and installs libfencelock into a temporary prefix, compiles the C tests and the
# examples against the INSTALLED header and libraries (pkg-config), starts redis-server
# processes on free loopback ports, and runs:
#   1. the C tests (fencelock_test.c, and pending_test.c: the callback acquisitions),
#      dynamically linked
#   2. the C tests under valgrind (--leak-check=full --error-exitcode=1)
#   3. the C tests built with -fsanitize=address
#   4. the examples (examples/c/), dynamically and statically linked, and one of them with
#      FENCELOCK_LOG set (events printed to stderr)
# Each run gets fresh servers (the tests kill one) and a fresh Redis Cluster (3 masters, 3
# replicas); servers are stopped by PID on exit.
# Env: PROFILE=debug|release (default debug), FL_SKIP_VALGRIND=1, FL_SKIP_ASAN=1.
# The last line is "N passed, N failed" over every run (C tests and examples).
# -E: the ERR trap below reports a failure inside a function too (say where it stopped).
set -Eeuo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
root="$(cd "$here/.." && pwd)"
cc="${CC:-gcc}"
work="$(mktemp -d "${TMPDIR:-/tmp}/fencelock-c.XXXXXX")"
prefix="$work/prefix"
pids=()
redis_extra=()
port_span=40000

cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do { wait "$pid"; } 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "tests/run.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

# Starts one redis-server on a free port; sets $port and $pid. Retries on a port clash.
# With "tls" it listens with TLS only, with the certificates make_certs made.
start_redis() {
  local attempt dir listen cli
  for attempt in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % port_span ))
    [ "$port" = 6379 ] && continue
    dir="$work/redis-$port"
    mkdir -p "$dir"
    listen=(--port "$port")
    cli=(redis-cli -p "$port")
    if [ "${1:-}" = tls ]; then
      listen=(--port 0 --tls-port "$port" --tls-cert-file "$tls/server.crt"
              --tls-key-file "$tls/server.key" --tls-ca-cert-file "$tls/ca.crt"
              --tls-auth-clients no)
      cli=(redis-cli --tls --cacert "$tls/ca.crt" -p "$port")
    fi
    redis-server "${listen[@]}" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
      --logfile "$dir/log" "${redis_extra[@]}" >/dev/null 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 100); do
      if [ "$("${cli[@]}" ping 2>/dev/null)" = PONG ]; then return 0; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || true
  done
  echo "cannot start redis-server" >&2
  return 1
}

# A CA and a server certificate for 127.0.0.1, for the TLS test (skipped without openssl).
tls="$work/tls"
make_certs() {
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  mkdir -p "$tls"
  (
    cd "$tls"
    openssl req -x509 -days 2 -subj "/CN=fencelock C test CA" "${ec[@]}" \
      -keyout ca.key -out ca.crt
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl req -new -subj "/CN=fencelock C test server" "${ec[@]}" \
      -keyout server.key -out server.csr
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt
  ) >/dev/null 2>&1
}

# Fresh servers for one test run: four plain ones (FL_TEST_PORTS; FL_TEST_KILL_PID is the
# fourth's) and, when certificates exist, a TLS one (FL_TEST_TLS_PORT, FL_TEST_TLS_CA); then a
# cluster, unless "no-cluster" (the pending tests use the first server alone).
start_servers() {
  local ps=() i kill
  for i in 1 2 3 4; do start_redis; ps+=("$port"); done
  kill="$pid"
  if [ -f "$tls/server.crt" ]; then
    start_redis tls
    export FL_TEST_TLS_PORT="$port" FL_TEST_TLS_CA="$tls/ca.crt"
  fi
  export FL_TEST_PORTS="${ps[*]}"
  export FL_TEST_KILL_PID="$kill"
  export FENCELOCK_URL="redis://127.0.0.1:${ps[0]}"
  [ "${1:-}" = no-cluster ] || start_cluster
}

# A Redis Cluster of 3 masters and 3 replicas (FL_TEST_CLUSTER_PORTS), every node a PID of
# $pids; returns once every node says cluster_state:ok and every replica is in sync.
start_cluster() {
  local cps=() i n ok
  # A node's cluster bus is its port + 10000: ports below 50000 keep it a port.
  redis_extra=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000)
  port_span=30000
  for i in 1 2 3 4 5 6; do start_redis; cps+=("$port"); done
  redis_extra=()
  port_span=40000
  redis-cli --cluster create $(printf '127.0.0.1:%s ' "${cps[@]}") --cluster-replicas 1 \
    --cluster-yes >/dev/null
  for _ in $(seq 600); do
    ok=1
    for n in "${cps[@]}"; do
      [[ "$(redis-cli -p "$n" cluster info)" == *cluster_state:ok* ]] || ok=0
      # A node that does not answer yet is not ready (not a failure of the script).
      info="$(redis-cli -p "$n" info replication 2>/dev/null || true)"
      if [[ "$info" == *role:slave* && "$info" != *master_link_status:up* ]]; then ok=0; fi
    done
    [ "$ok" = 1 ] && break
    sleep 0.05
  done
  [ "$ok" = 1 ] || { echo "the cluster did not become ready" >&2; return 1; }
  export FL_TEST_CLUSTER_PORTS="${cps[*]}"
}

stop_servers() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do { wait "$pid"; } 2>/dev/null || true; done
  pids=()
}

echo "== build and install into $prefix"
make -s -C "$here" install PREFIX="$prefix" PROFILE="${PROFILE:-debug}"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export FL_TEST_VERSION="$(pkg-config --modversion fencelock)"
cflags=(-Wall -Wextra -Werror -pedantic -std=c11 -g)
read -r -a fl_cflags <<<"$(pkg-config --cflags fencelock)"
read -r -a fl_libs <<<"$(pkg-config --libs fencelock)"
# Static: the archive by name, then what it needs (Libs.private).
read -r -a fl_static <<<"$(pkg-config --static --libs fencelock | sed 's/-lfencelock /-l:libfencelock.a /')"
rpath=(-Wl,-rpath,"$prefix/lib")

echo "== compile (${cc}: ${cflags[*]})"
"$cc" "${cflags[@]}" "${fl_cflags[@]}" "$here/tests/fencelock_test.c" "${fl_libs[@]}" "${rpath[@]}" \
  -lpthread -o "$work/fencelock_test"
"$cc" "${cflags[@]}" -O1 -fsanitize=address -fno-omit-frame-pointer "${fl_cflags[@]}" \
  "$here/tests/fencelock_test.c" "${fl_libs[@]}" "${rpath[@]}" -lpthread -o "$work/fencelock_test_asan"
"$cc" "${cflags[@]}" "${fl_cflags[@]}" "$here/tests/pending_test.c" "${fl_libs[@]}" "${rpath[@]}" \
  -lpthread -o "$work/pending_test"
"$cc" "${cflags[@]}" -O1 -fsanitize=address -fno-omit-frame-pointer "${fl_cflags[@]}" \
  "$here/tests/pending_test.c" "${fl_libs[@]}" "${rpath[@]}" -lpthread -o "$work/pending_test_asan"
for ex in "$root"/examples/c/*.c; do
  name="$(basename "$ex" .c)"
  "$cc" "${cflags[@]}" "$ex" "${fl_cflags[@]}" "${fl_libs[@]}" "${rpath[@]}" -lpthread -o "$work/$name"
  "$cc" "${cflags[@]}" "$ex" "${fl_cflags[@]}" "${fl_static[@]}" -lpthread -o "$work/$name-static"
done
# The dynamic binaries resolve the installed library by its SONAME; the static ones do not
# need it; the library exports exactly the functions the header declares.
# (Outputs are captured first: `cmd | grep -q` can fail under pipefail when grep exits early.)
deps="$(ldd "$work/fencelock_test")"
if [[ "$deps" != *"libfencelock.so.0 => $prefix/lib/libfencelock.so.0"* ]]; then
  echo "the test program does not load the installed libfencelock.so.0:" >&2
  echo "$deps" >&2
  exit 1
fi
deps="$(ldd "$work/with_lock-static")"
if [[ "$deps" == *libfencelock* ]]; then
  echo "the static example still needs libfencelock.so" >&2
  exit 1
fi
exported="$(nm -D --defined-only "$prefix/lib/libfencelock.so" | awk '{print $3}' | sort)"
declared="$(sed -nE 's/^[a-z_ ]+[ *]+(fl_[a-z_]+)\(.*/\1/p' "$prefix/include/fencelock.h" | sort)"
if [ "$exported" != "$declared" ]; then
  echo "exported symbols differ from the header's functions:" >&2
  diff <(echo "$exported") <(echo "$declared") >&2 || true
  exit 1
fi
echo "== $(echo "$exported" | wc -l) functions exported, all declared in fencelock.h"
# The header also compiles as C99 and, when a C++ compiler is there, as C++ (extern "C").
echo '#include <fencelock.h>' | "$cc" -x c -std=c99 -Wall -Wextra -Werror -pedantic "${fl_cflags[@]}" -fsyntax-only -
if command -v g++ >/dev/null 2>&1; then
  echo '#include <fencelock.h>' | g++ -x c++ -std=c++11 -Wall -Wextra -Werror -pedantic "${fl_cflags[@]}" -fsyntax-only -
fi

if command -v openssl >/dev/null 2>&1 && make_certs; then
  echo "== TLS certificates made: the TLS test runs"
else
  echo "== no openssl: the TLS test is skipped"
fi

passed=0
failed=0
failures=()
record() { # name, exit status
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "== $1: ok"
  else failed=$((failed + 1)); failures+=("$1"); echo "== $1: FAILED (exit $2)"; fi
}

# Runs the C test program once; its tests count one by one in the summary.
run_suite() { # label, command...
  local label="$1" status=0 line p f
  shift
  case "$label" in pending-*) start_servers no-cluster ;; *) start_servers ;; esac
  echo "== C tests: $label"
  "$@" >"$work/out-$label" || status=$?
  cat "$work/out-$label"
  stop_servers
  line="$(tail -n 1 "$work/out-$label")"
  if [[ "$line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    p="${BASH_REMATCH[1]}"; f="${BASH_REMATCH[2]}"
  else
    p=0; f=1
  fi
  if [ "$status" != 0 ] && [ "$f" = 0 ]; then f=1; fi # e.g. valgrind errors, sanitizer reports
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" = 0 ]; then echo "== C tests ($label): ok ($p tests)"
  else failures+=("C tests ($label)"); echo "== C tests ($label): FAILED (exit $status)"; fi
}

run_suite plain "$work/fencelock_test"
run_suite pending-plain "$work/pending_test"
if [ "${FL_SKIP_VALGRIND:-}" != 1 ]; then
  # No suppressions: fl_manager_free joins the manager's thread, so nothing is left running
  # (and nothing "possibly lost") at exit. fork()ed children (the multi-process test) run
  # under valgrind too and are checked the same way.
  # Without the TLS test: valgrind cannot follow ring's AES-GCM assembly and reports its
  # output as uninitialised (a known false positive of that kind of code, and it changes with
  # the CPU's features, so no suppression would be reliable). TLS runs plain and under ASan.
  # FL_TEST_SERVER_TIMEOUT_MS: a per-server timeout that allows for valgrind's slowness.
  run_suite valgrind env FL_TEST_TLS_PORT= FL_TEST_SERVER_TIMEOUT_MS=5000 valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 \
    "$work/fencelock_test"
  run_suite pending-valgrind env FL_TEST_SERVER_TIMEOUT_MS=5000 valgrind --quiet --leak-check=full \
    --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
    --error-exitcode=1 "$work/pending_test"
fi
if [ "${FL_SKIP_ASAN:-}" != 1 ]; then
  run_suite asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$work/fencelock_test_asan"
  run_suite pending-asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "$work/pending_test_asan"
fi

start_servers
for ex in "$root"/examples/c/*.c; do
  name="$(basename "$ex" .c)"
  for variant in "$name" "$name-static"; do
    echo "== example $variant"
    status=0
    "$work/$variant" "$FENCELOCK_URL" || status=$?
    record "example $variant" "$status"
  done
done
# FENCELOCK_LOG prints the events to stderr, never a token (request_id's tokens are the
# request ids "request-A" and "request-B"); an unknown value warns once and is ignored.
check_log() { # level, pattern that must appear in stderr
  local status=0 err
  FENCELOCK_LOG="$1" "$work/request_id" "$FENCELOCK_URL" >"$work/log-out" 2>"$work/log-err" || status=$?
  err="$(cat "$work/log-err")"
  if [ "$status" != 0 ] || [[ "$err" != *"$2"* ]] || [[ "$err" == *request-[AB]* ]]; then
    echo "FENCELOCK_LOG=$1: exit $status, stderr lacks \"$2\" or shows a token:" >&2
    echo "$err" >&2
    return 1
  fi
}
status=0
check_log debug 'fencelock debug: acquired lock=' && check_log DEBUG 'fencelock debug: release lock=' \
  && check_log trace 'fencelock trace: acquire attempt lock=' \
  && check_log verbose 'FENCELOCK_LOG="verbose" is not a level' || status=$?
if [ "$status" = 0 ] && [ -n "$(FENCELOCK_LOG= "$work/request_id" "$FENCELOCK_URL" 2>&1 >/dev/null)" ]; then
  echo "without FENCELOCK_LOG the example wrote to stderr" >&2
  status=1
fi
record "FENCELOCK_LOG" "$status"
stop_servers

[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
if [ "$failed" != 0 ]; then exit 1; fi
