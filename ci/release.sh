#!/usr/bin/env bash
# Builds every artifact this machine can build into dist/, with the one version of the
# workspace (Cargo.toml [workspace.package] version; pyproject.toml, package.json and the C
# header's FENCELOCK_VERSION follow it, and this script stops if they drift):
#
#   fencelock-V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl   Python, glibc 2.17
#   fencelock-V.tar.gz                        Python sdist (builds with a Rust toolchain and pip)
#   fencelock-V.tgz                           npm: the main package (optionalDependencies on
#                                             the platform packages of package.json napi.targets)
#   fencelock-linux-x64-gnu-V.tgz             npm: the linux-x64-gnu addon, glibc 2.17
#   fencelock-V-x86_64-linux-gnu.tar.gz       C: header, libfencelock.so (SONAME, symlinks),
#                                             libfencelock.a, relocatable fencelock.pc, and the
#                                             fencelock command in bin/ (the wheel and the npm
#                                             package carry it too, as an entry point)
#   fencelock-V.jar, -sources.jar, -javadoc.jar, fencelock-V.pom
#                                             Java (Maven io.fencelock:fencelock): the jar
#                                             carries libfencelock for linux-x86-64, glibc 2.17
#   go/github.com/fencelock/fencelock/bindings-go/@v/vV.{info,mod,zip}, list
#                                             Go: the module as a module proxy serves it
#                                             (GOPROXY=file://dist/go), the static library
#                                             (glibc 2.17) inside
#   SHA256SUMS                                over all of the above
#
# Linux x86-64 binaries are linked against glibc 2.17 with zig (ziglang and maturin's zig
# wrappers, from PyPI, installed into target/venv-release), so they run on every Linux of the
# last ten years (RHEL 7 and later, Debian 8 and later, Amazon Linux 2). Other platforms are
# built on their own machines with the same commands; their packages' names are in
# package.json.
#
# Usage: ci/release.sh [--out DIR]   (default dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$ROOT/dist"
if [ "${1:-}" = "--out" ]; then OUT="$(mkdir -p "$2" && cd "$2" && pwd)"; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
TRIPLE=x86_64-unknown-linux-gnu
PYTHON="${PYTHON:-python3}"

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "no [workspace.package] version in Cargo.toml" >&2; exit 1; }
echo "fencelock $version"

# --- one version everywhere
drift=()
pkg_version=$(node -p "require('./bindings-node/package.json').version")
[ "$pkg_version" = "$version" ] || drift+=("bindings-node/package.json has $pkg_version")
grep -q '^dynamic = \["version"\]' bindings-python/pyproject.toml \
  || drift+=("bindings-python/pyproject.toml must take its version from Cargo.toml (dynamic)")
header_version=$(sed -n 's/^#define FENCELOCK_VERSION "\(.*\)"/\1/p' bindings-c/include/fencelock.h)
[ "$header_version" = "$version" ] || drift+=("bindings-c/include/fencelock.h has FENCELOCK_VERSION $header_version")
pom_version=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' bindings-java/pom.xml | head -n 1)
[ "$pom_version" = "$version" ] || drift+=("bindings-java/pom.xml has version $pom_version")
for crate in core cli bindings-python bindings-node bindings-c; do
  grep -q '^version.workspace = true' "$crate/Cargo.toml" || drift+=("$crate/Cargo.toml does not use the workspace version")
done
if [ ${#drift[@]} -gt 0 ]; then
  printf 'version drift from Cargo.toml (%s):\n' "$version" >&2
  printf '  %s\n' "${drift[@]}" >&2
  exit 1
fi

# --- the tools: maturin and zig, pinned, in a virtualenv of their own
venv="$CARGO_TARGET_DIR/venv-release"
if [ ! -x "$venv/bin/maturin" ] || [ ! -d "$venv/lib/python3"*/site-packages/ziglang ]; then
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0" "ziglang==0.13.0"
fi
export PATH="$venv/bin:$PATH"
# maturin's zig support (cargo-zigbuild's code) finds zig through this (ziglang ships it as a
# Python module).
export CARGO_ZIGBUILD_ZIG_PATH="$venv/bin/python3 -m ziglang"

rm -rf "$OUT"
mkdir -p "$OUT"
stage="$CARGO_TARGET_DIR/release-staging"
rm -rf "$stage"
mkdir -p "$stage"

# --- Python: abi3 wheel for manylinux2014 (glibc 2.17), and the sdist
echo "--- python wheel (manylinux2014) and sdist"
# maturin runs Cargo with zig as the linker and C compiler for glibc 2.17 (CC_<triple>,
# CARGO_TARGET_<TRIPLE>_LINKER and a few more). The Node addon, the C library and the command
# are built below with the environment it gave Cargo, recorded here by a `cargo` in front of
# the real one: with the same linker and compiler, that build reuses the core and every
# dependency this one compiled (a different zig setup, such as cargo-zigbuild's, compiled
# them all again: 95 s more at optimisation level 0).
real_cargo=$(command -v cargo)
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
cat > "$shim/cargo" <<SHIM
#!/bin/sh
env -0 > "$shim/env"
exec "$real_cargo" "\$@"
SHIM
chmod +x "$shim/cargo"
(cd bindings-python && PATH="$shim:$PATH" maturin build --locked \
  --release --zig --compatibility manylinux2014 --target "$TRIPLE" --out "$OUT")
(cd bindings-python && maturin sdist --out "$OUT")
[ -s "$shim/env" ] || { echo "maturin did not run cargo through $shim/cargo" >&2; exit 1; }
mapfile -d '' -t maturin_env < "$shim/env"
linker_var="CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$TRIPLE")_LINKER"
grep -qz "^$linker_var=.*zigcc" "$shim/env" \
  || { echo "maturin's build had no zig linker for $TRIPLE ($linker_var)" >&2; exit 1; }

# --- Node: the linux-x64-gnu addon (glibc 2.17) and the two npm packages
echo "--- npm packages"
# The Node addon, the C library and the fencelock command in one build (one feature set: the
# core and its dependencies are compiled once for all three), in maturin's environment.
env -i "${maturin_env[@]}" "$real_cargo" build --locked --release \
  -p fencelock-node -p fencelock-c -p fencelock-cli --target "$TRIPLE"
node ci/npm-packages.js "$stage/npm" "$CARGO_TARGET_DIR/$TRIPLE/release/libfencelock_node.so"
for dir in "$stage"/npm/*/; do
  (cd "$dir" && npm pack --silent --pack-destination "$OUT" >/dev/null)
done

# --- C: the release archive
echo "--- C archive"
name="fencelock-$version-x86_64-linux-gnu"
make -s -C bindings-c install SKIP_BUILD=1 RELOCATABLE=1 \
  OUT="$CARGO_TARGET_DIR/$TRIPLE/release" PREFIX="$stage/c/$name"
# The fencelock command (docs/cli.md) beside the library.
install -D -m 755 "$CARGO_TARGET_DIR/$TRIPLE/release/fencelock" "$stage/c/$name/bin/fencelock"
# Its manual pages, rendered by the command from the same definitions as its --help.
mkdir -p "$stage/c/$name/share/man/man1"
"$stage/c/$name/bin/fencelock" man > "$stage/c/$name/share/man/man1/fencelock.1"
for sub in run acquire release extend status man; do
  "$stage/c/$name/bin/fencelock" man "$sub" > "$stage/c/$name/share/man/man1/fencelock-$sub.1"
done
cp LICENSE* "$stage/c/$name/" 2>/dev/null || true
cp bindings-c/RELEASE-README.md "$stage/c/$name/README.md"
tar -C "$stage/c" --owner=0 --group=0 --numeric-owner -czf "$OUT/$name.tar.gz" "$name"

# --- Java: the jar with the glibc 2.17 library inside, its sources and javadoc jars, the POM
echo "--- Java jars"
mkdir -p "$stage/java/native/linux-x86-64"
cp -L "$stage/c/$name/lib/libfencelock.so" "$stage/java/native/linux-x86-64/libfencelock.so"
ci/maven.sh -f bindings-java/pom.xml -Dfencelock.native="$stage/java/native" \
  -Dfencelock.build="$stage/java/build" package
for jar in "" -sources -javadoc; do
  cp "$stage/java/build/fencelock-$version$jar.jar" "$OUT/"
done
cp bindings-java/pom.xml "$OUT/fencelock-$version.pom"

# --- Go: the module with the static library (of the build above) inside, as a proxy serves it
echo "--- Go module"
"$PYTHON" ci/go-module.py "$version" "$CARGO_TARGET_DIR/$TRIPLE/release/libfencelock_c.a" \
  bindings-c/include/fencelock.h "$OUT/go"

# --- checksums
(cd "$OUT" && find . -type f ! -name SHA256SUMS -printf '%P\n' | sort | xargs sha256sum -- > SHA256SUMS)
echo "--- dist/"
(cd "$OUT" && ls -l)
