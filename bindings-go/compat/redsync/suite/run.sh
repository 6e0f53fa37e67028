#!/usr/bin/env bash
# Runs redsync's own tests (redsync_test.go, mutex_test.go and error_test.go of the
# github.com/go-redsync/redsync/v4 module at the version compat/redsync/go.mod requires, from
# the Go module proxy) against the drop-in, beside the unmodified library as a control.
#
# redsync's tests are in its package (they build Mutexes field by field and read their
# fields), so "the import changed" means: the test files compiled with the drop-in's sources
# in place of redsync's. One edit to their text: the 48 redis-servers they start (tempredis,
# six blocks of eight for six client libraries) take a block of ports found free here instead
# of the fixed 51200-51247. scripts_test.go tests redsync's own Lua scripts, which the
# drop-in does not have. The drop-in's deliberate differences are the expected failures
# below, each with its reason (docs/migrating.md lists them); any other failure, or an
# expected failure that passes, fails the run.
#
# Usage: run.sh [WORK_DIR]   (needs go, python3 and redis-server on PATH; libfencelock built
# by bindings-go/build.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
compat=$(cd "$here/.." && pwd)
bindings=$(cd "$compat/../.." && pwd)
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/redsync-suite.XXXXXX")}
mkdir -p "$work"
work=$(cd "$work" && pwd)
export GOWORK=off GOFLAGS=-mod=mod

# Subtests that fail on purpose: "Test/driver<TAB>reason". Empty for now.
expected_failures=$(cat <<'EOF'
EOF
)

version=$(cd "$compat" && go list -m -f '{{.Version}}' github.com/go-redsync/redsync/v4)
src=$(cd "$compat" && go mod download -json "github.com/go-redsync/redsync/v4@$version" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
echo "redsync $version's tests from $src"

# A block of 96 ports free on every interface (tempredis's servers listen on all of them),
# below the kernel's range for outgoing connections' ports (which no check here can reserve).
base=$(python3 - <<'EOF'
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
def free(port):
    s = socket.socket()
    try:
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(200):
    base = random.randrange(10000, low - 96)
    if all(free(p) for p in range(base, base + 96)):
        print(base)
        break
else:
    raise SystemExit("no block of 96 free ports")
EOF
)
echo "servers on ports $base-$((base + 95)): the control's first 48, the drop-in's the rest"

# The test files, with the port block moved.
place_tests() {
  local f
  for f in redsync_test.go mutex_test.go error_test.go; do
    sed "s/51200/$2/g" "$src/$f" > "$1/$f"
  done
}

# Control: the unmodified library with the same tests.
rm -rf "$work/control"
cp -r "$src" "$work/control"
chmod -R u+w "$work/control"
place_tests "$work/control" "$base"
# The control runs while the drop-in is prepared and tested, on servers of its own: both
# suites mostly sleep (their expiry tests wait out TTLs of seconds), one after the other they
# took two minutes. Its output is printed when it ends.
# (In a session of its own, so that a run that stops early stops it and its servers too.)
setsid --wait bash -c 'cd "$1" && exec go test -count=1 -timeout 20m .' _ "$work/control" \
  > "$work/control.log" 2>&1 &
control=$!
trap 'kill -- -"$control" 2>/dev/null || true' EXIT

# The drop-in: its sources, its module (the fencelock binding by absolute path), redsync's
# test dependencies at the versions redsync requires.
rm -rf "$work/dropin"
mkdir -p "$work/dropin"
for f in "$compat"/*.go; do
  case "$f" in *_test.go) ;; *) cp "$f" "$work/dropin/" ;; esac
done
cp "$compat/go.mod" "$compat/go.sum" "$work/dropin/"
place_tests "$work/dropin" "$((base + 48))"
(
  cd "$work/dropin"
  go mod edit -replace "github.com/fencelock/fencelock/bindings-go=$bindings"
  python3 - "$src/go.mod" <<'EOF' > edits.txt
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r"require \((.*?)\)", text, re.S) + re.findall(r"^require (\S+ \S+)", text, re.M):
    for line in block.strip().splitlines():
        parts = line.split("//")[0].split()
        if len(parts) == 2:
            print(f"-require={parts[0]}@{parts[1]}")
for old, new, ver in re.findall(r"^replace (\S+) => (\S+) (\S+)", text, re.M):
    print(f"-replace={old}={new}@{ver}")
EOF
  xargs go mod edit < edits.txt
  # redsync's checksums (its tempredis fork is not in the checksum database).
  cat "$src/go.sum" >> go.sum
  rm -f edits.txt
  go mod tidy
)
set +e
(cd "$work/dropin" && CGO_ENABLED=1 go test -count=1 -timeout 20m -v . ) > "$work/dropin.log" 2>&1
status=$?
wait "$control"
control_status=$?
set -e
echo "--- control: redsync $version itself"
cat "$work/control.log"
[ "$control_status" = 0 ] || { echo "the control (redsync itself) failed its own tests" >&2; exit 1; }
echo "--- the drop-in with redsync $version's tests"
grep -E '^--- (PASS|FAIL|SKIP)' "$work/dropin.log" || true
failed=$({ grep -E '^\s*--- FAIL: \S+/' "$work/dropin.log" || true; } | sed -E 's/^\s*--- FAIL: (\S+).*/\1/' | sort -u)
passed=$(grep -cE '^\s*--- PASS: \S+/' "$work/dropin.log" || true)
expected=$(printf '%s\n' "$expected_failures" | cut -f1 | grep -v '^$' | sort -u || true)
unexpected=$(comm -23 <(printf '%s\n' "$failed" | grep -v '^$') <(printf '%s\n' "$expected" | grep -v '^$'))
fixed=$(comm -13 <(printf '%s\n' "$failed" | grep -v '^$') <(printf '%s\n' "$expected" | grep -v '^$'))
echo "drop-in: $passed subtests passed, $(printf '%s\n' "$failed" | grep -vc '^$') failed ($(printf '%s\n' "$expected" | grep -vc '^$') expected)"
if [ -n "$unexpected" ] || [ -n "$fixed" ] || { [ "$status" != 0 ] && [ -z "$failed" ]; }; then
  [ -n "$unexpected" ] && printf 'failed unexpectedly:\n%s\n' "$unexpected"
  [ -n "$fixed" ] && printf 'expected to fail but passed:\n%s\n' "$fixed"
  grep -vE '^\s*--- PASS|^=== (RUN|PAUSE|CONT)' "$work/dropin.log" | tail -60
  exit 1
fi
echo "redsync's own tests: as expected"
