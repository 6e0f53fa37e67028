#!/usr/bin/env bash
# Makes sure every language's contend worker can run (debug builds), reusing what is already
# built and fresh, building what is missing or older than its sources. Idempotent.
#
#   Rust:   chaos-worker, chaos-check, chaos-demo (cargo build -p fencelock-chaos --bins)
#   C:      libfencelock installed into target/mixed/c-prefix (make -C bindings-c install);
#           worker.c is compiled against it by the tests and the demo
#   Node:   the package staged in target/mixed/node-package: bindings-node's JS files and its
#           addon (the one ci/stages/30-node.sh built when it is fresh, else napi build --output-dir
#           after npm ci if bindings-node/node_modules is missing); nothing is written into
#           bindings-node/ but its node_modules
#   Java:   fencelock.jar (bindings-java/build.sh, over the same installed library) and
#           Worker.java compiled against it, in target/mixed/java
#   Go:     libfencelock.a into bindings-go (bindings-go/build.sh) and the worker
#           (tests/chaos/workers/go) built on it into target/mixed/worker-go
#   Python: a virtualenv with the fencelock WHEEL installed: target/venv-ci-python (made by
#           ci/stages/20-python.sh) when it is fresh, else target/venv-mixed (maturin build +
#           pip install of the wheel)
#
# Writes target/mixed/env (FENCELOCK_PYTHON, FENCELOCK_C_PREFIX, FENCELOCK_NODE_PACKAGE,
# FENCELOCK_JAVA_CLASSPATH) for
# `source`: ci/stages/60-mixed.sh and ci/demo.sh read it. Progress goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
out="$root/target/mixed"
mkdir -p "$out"
say() { echo "workers/build.sh: $*" >&2; }

# True when a file under the given paths is newer than $1 (or $1 does not exist).
stale() {
  local artifact="$1"
  shift
  [ -e "$artifact" ] || return 0
  [ -n "$(find "$@" -newer "$artifact" -type f -print -quit 2>/dev/null)" ]
}
core_sources=(core/src core/Cargo.toml Cargo.lock)

say "rust: chaos binaries (the core and its dependencies, shared by every face below)"
cargo build --locked -p fencelock-chaos --bins

say "c: libfencelock into target/mixed/c-prefix"
make -s -C bindings-c install PREFIX="$out/c-prefix" >&2

# The Node package is staged in target/mixed/node-package (bindings-node's JS files plus the
# addon), so that nothing is written into bindings-node/ except its node_modules.
pkg="$out/node-package"
node_sources=("${core_sources[@]}" bindings-node/src bindings-node/Cargo.toml)
mkdir -p "$pkg"
ci_addon=$(ls bindings-node/*.node 2>/dev/null | head -n 1 || true)
staged=$(ls "$pkg"/*.node 2>/dev/null | head -n 1 || true)
if [ -n "$ci_addon" ] && ! stale "$ci_addon" "${node_sources[@]}"; then
  say "node: reusing $ci_addon"
  cp -f "$ci_addon" "$pkg/"
elif [ -n "$staged" ] && ! stale "$staged" "${node_sources[@]}"; then
  say "node: reusing $staged"
else
  say "node: building the addon into $pkg"
  if [ ! -x bindings-node/node_modules/.bin/napi ]; then
    (cd bindings-node && npm ci --no-audit --no-fund >&2)
  fi
  (cd bindings-node && npx napi build --platform --no-js --dts native.d.ts --output-dir "$pkg" -- --locked >&2)
fi
# The package's files as package.json lists them (npm pack's), so that the docs' blocks
# (ci/docs.py) find `fencelock/metrics` and `fencelock/compat/redlock` too.
# The list is read from package.json ("files", less the addon's glob), so a new module is staged
# with it.
(cd bindings-node && node -e '
  for (const f of require("./package.json").files) if (!f.includes("*")) console.log(f.replace(/\/$/, ""))
' | xargs cp -rf -t "$pkg/" package.json)

python=""
for venv in "$root/target/venv-ci-python" "$root/target/venv-mixed"; do
  [ -x "$venv/bin/python" ] || continue
  native=$(cd /tmp && "$venv/bin/python" -c 'import fencelock._native as n; print(n.__file__)' 2>/dev/null || true)
  [ -n "$native" ] || continue
  if stale "$native" "${core_sources[@]}" bindings-python/src bindings-python/python \
      bindings-python/Cargo.toml bindings-python/pyproject.toml; then
    continue
  fi
  python="$venv/bin/python"
  say "python: reusing the wheel in $venv"
  break
done
if [ -z "$python" ]; then
  venv="$root/target/venv-mixed"
  say "python: building the wheel into $venv"
  [ -x "$venv/bin/python" ] || "${PYTHON:-python3}" -m venv "$venv"
  [ -x "$venv/bin/maturin" ] || "$venv/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0" >&2
  rm -rf "$out/wheels"
  (cd bindings-python && "$venv/bin/maturin" build --locked --out "$out/wheels" >&2)
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$out"/wheels/fencelock-*.whl >&2
  python="$venv/bin/python"
fi

say "java: fencelock.jar and Worker.java into target/mixed/java"
# The jar over the library installed above, and the worker compiled against it.
bindings-java/build.sh "$out/java" "$out/c-prefix"
rm -rf "$out/java/worker"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -cp "$out/java/fencelock.jar:/usr/share/java/jna.jar" \
  -d "$out/java/worker" tests/chaos/workers/Worker.java

say "go: libfencelock's static library for bindings-go, and the worker on it"
bindings-go/build.sh >&2
(cd tests/chaos/workers/go && go build -o "$out/worker-go" .)

cat > "$out/env" <<ENV
export FENCELOCK_PYTHON="$python"
export FENCELOCK_C_PREFIX="$out/c-prefix"
export FENCELOCK_NODE_PACKAGE="$pkg"
export FENCELOCK_GO_MODULE="$root/bindings-go"
export FENCELOCK_JAVA_CLASSPATH="$out/java/worker:$out/java/fencelock.jar:/usr/share/java/jna.jar"
ENV
say "ready (target/mixed/env)"
