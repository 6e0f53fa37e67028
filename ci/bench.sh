#!/usr/bin/env bash
# Benchmarks fencelock against the peer libraries in one run (see bench/RESULTS.md).
#
#   ci/bench.sh                  full run (about 10 minutes once built): writes bench/results/latest.json,
#                                bench/results/latest.png and bench/RESULTS.md; the coordination
#                                family's FAMILY.md, the command line's CLI.md and the Java
#                                binding's JAVA.md, the Go binding's GO.md (bench/family.py,
#                                bench/cli.py, bench/java.py, bench/go.py), leader election's
#                                ELECTION.md (bench/election.py, beside etcd), each with
#                                results/*-latest.json; what
#                                observing costs, way by way (bench/observing.py, printed)
#   ci/bench.sh --quick          a shorter run (under 3 minutes once built), same files
#   ci/bench.sh --quick --smoke  one tiny round with debug builds, into target/bench/smoke/:
#                                checks that every runner works (run by ci/test.sh)
#
# Installs the peers into throwaway places: a virtualenv under target/bench/ (PyPI: redis with
# hiredis, pottery, python-redis-lock), bench/node/node_modules (npm: redlock, ioredis,
# redis-semaphore) and the
# bench-only crate bench/rust (crates.io: rslock), which is not part of the shipped workspace.
# Starts and stops its own redis-server processes on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
export CARGO_TERM_COLOR=never

quick=() smoke=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=(--quick) ;;
    --smoke) smoke=1 ;;
    *) echo "usage: ci/bench.sh [--quick] [--smoke]" >&2; exit 2 ;;
  esac
done

ci/install-redis.sh

if [ "$smoke" = 1 ]; then
  profile=debug cargo_profile=() maturin_profile=() napi_profile=()
  out_dir="$root/target/bench/smoke"
  run_flags=(--smoke --build debug)
else
  profile=release cargo_profile=(--release) maturin_profile=(--release) napi_profile=(--release)
  out_dir="$root/bench"
  run_flags=("${quick[@]}" --build release)
fi

PYTHON="${PYTHON:-python3}"
venv="$root/target/bench/venv"
echo "--- Python: peers and our wheel ($profile) in $venv"
if [ ! -x "$venv/bin/python" ]; then
  "$PYTHON" -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r bench/python/requirements.txt \
  "maturin==1.16.0" "matplotlib==3.10.7"
wheels="$root/target/bench/wheels-$profile"
rm -rf "$wheels"
(cd bindings-python && "$venv/bin/maturin" build --locked "${maturin_profile[@]}" --out "$wheels" 2>&1 | tail -n 2)
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$wheels"/fencelock-*.whl

echo "--- Node: peers and our addon ($profile)"
(cd bench/node && npm ci --no-audit --no-fund --loglevel=error)
# (bindings-node's modules as stage 30 installed them when npm finds them whole: a second
# `npm ci` would only delete and fetch them again, 20 s.)
(cd bindings-node && { npm ls --all >/dev/null 2>&1 || npm ci --no-audit --no-fund --loglevel=error; } \
  && npx napi build --platform "${napi_profile[@]}" --js native.js --dts native.d.ts -- --locked 2>&1 | tail -n 2)

echo "--- Rust: the bench crate ($profile)"
cargo build --locked "${cargo_profile[@]}" --manifest-path bench/rust/Cargo.toml 2>&1 | tail -n 2
rust_bin="$(ci/out-dir.sh "$profile")/fencelock-bench"

echo "--- run"
mkdir -p "$out_dir"
FENCELOCK_NODE="$root/bindings-node" "$venv/bin/python" bench/run.py \
  --rust-bin "$rust_bin" --python "$venv/bin/python" --out-dir "$out_dir" "${run_flags[@]}"

echo "--- the coordination family against redis-semaphore (bench/family.py)"
family_flags=()
[ "$smoke" = 1 ] && family_flags=(--smoke)
[ "$smoke" = 0 ] && [ ${#quick[@]} -gt 0 ] && family_flags=(--quick)
FENCELOCK_NODE="$root/bindings-node" "$venv/bin/python" bench/family.py --out-dir "$out_dir" "${family_flags[@]}"

echo "--- the command line against flock and redis-cli (bench/cli.py)"
cargo build --locked "${cargo_profile[@]}" -p fencelock-cli 2>&1 | tail -n 1
"$venv/bin/python" bench/cli.py --fencelock "$(ci/out-dir.sh "$profile")/fencelock" --out-dir "$out_dir" \
  "${family_flags[@]}"

echo "--- leader election: hand-over, fail-over, observers; beside etcd (bench/election.py)"
# etcd from Debian's packages, where it installs (the etcd rows are left out without it).
if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
  ci/apt-install.sh etcd-server etcd-client || echo "bench: etcd did not install; no etcd rows" >&2
fi
"$venv/bin/python" bench/election.py --rust-bin "$rust_bin" \
  --fencelock "$(ci/out-dir.sh "$profile")/fencelock" --out-dir "$out_dir" "${family_flags[@]}"

echo "--- the Java binding against the core through the C interface (bench/java.py)"
# libfencelock of this profile installed under target/bench (debug: what stage 40 built), the
# binding's jar over it (bindings-java/build.sh installs the JDK and JNA when missing), the C
# reference and the Java runner compiled against them.
c_prefix="$root/target/bench/c-$profile"
make -s -C bindings-c install PREFIX="$c_prefix" PROFILE="$profile" >/dev/null
bindings-java/build.sh "$root/target/bench/java-$profile" "$c_prefix"
cc -O2 -Wall -Werror -o "$c_prefix/cycle" bench/c/cycle.c -I"$c_prefix/include" \
  -L"$c_prefix/lib" -lfencelock -Wl,-rpath,"$c_prefix/lib"
java_cp="$root/target/bench/java-$profile/fencelock.jar:/usr/share/java/jna.jar"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$java_cp" \
  -d "$root/target/bench/java-$profile/runner" bench/java/Cycle.java
"$venv/bin/python" bench/java.py --c-bin "$c_prefix/cycle" \
  --java-classpath "$java_cp:$root/target/bench/java-$profile/runner" --out-dir "$out_dir" \
  "${family_flags[@]}"

echo "--- the Go binding against redsync and redislock (bench/go.py)"
# The binding over libfencelock's static library of this profile (bindings-go/build.sh), the
# peers from the Go module proxy (bench/go's go.mod).
PROFILE="$profile" bindings-go/build.sh
(cd bench/go && go build -o "$root/target/bench/bench-go-$profile" .)
"$venv/bin/python" bench/go.py --runner "$root/target/bench/bench-go-$profile" --out-dir "$out_dir" \
  "${family_flags[@]}"

echo "--- what observing costs, way by way (bench/observing.py)"
observing_flags=(--rounds 6 --seconds 3)
[ "$smoke" = 1 ] && observing_flags=(--rounds 1 --seconds 0.3)
[ "$smoke" = 0 ] && [ ${#quick[@]} -gt 0 ] && observing_flags=(--rounds 2 --seconds 2)
"$venv/bin/python" bench/observing.py --bin "$rust_bin" "${observing_flags[@]}"

for f in RESULTS.md results/latest.json results/latest.png FAMILY.md results/family-latest.json \
         CLI.md results/cli-latest.json JAVA.md results/java-latest.json GO.md results/go-latest.json \
         ELECTION.md results/election-latest.json; do
  [ -s "$out_dir/$f" ] || { echo "bench: $out_dir/$f was not written" >&2; exit 1; }
done
echo "bench: wrote $out_dir/RESULTS.md, $out_dir/results/latest.json, $out_dir/results/latest.png"
