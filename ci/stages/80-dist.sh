#!/usr/bin/env bash
# Distribution: ci/release.sh builds dist/, then every artifact is installed the way users
# install it, through real registries started on loopback for the test, in clean places with
# no Rust toolchain on the PATH:
#   - a pypiserver index holding the wheel and sdist: `pip install fencelock` into a new
#     virtualenv, import, one acquire/release against a redis-server; auditwheel says
#     manylinux2014;
#   - a verdaccio registry holding both npm packages: `npm install fencelock` in an empty
#     directory pulls the linux-x64-gnu package; require and import, one acquire/release,
#     `tsc --noEmit` on a typed file;
#   - the C archive unpacked to a temporary prefix: an example compiled with pkg-config,
#     shared and static, and run; its library, its command and the Node addon ask for
#     nothing newer than glibc 2.17;
#   - the Java jars deployed to a file:// Maven repository, and a consumer project that
#     depends on io.fencelock:fencelock by its coordinates, built and run with Maven;
#   - the Go module from a file:// module proxy, required by path and version by a consumer
#     module built with cgo and run; without cgo its build says what it needs;
#   - the fencelock command from each: the wheel's console script, the npm package's bin, the
#     archive's bin/fencelock, and `cargo install --path cli`: its version, `run` passing the
#     command's exit code, the lock released;
#   - bad cases: a loader told it runs on another platform names the package to install; a
#     corrupted artifact fails the SHA256SUMS check.
# Every server this stage starts (redis-server, pypiserver, verdaccio) is stopped by its PID.
set -euo pipefail
# Output is searched as `grep -q PATTERN <<<"$(command)"`, never `command | grep -q PATTERN`:
# grep -q exits at its first match, a command still writing then dies of SIGPIPE, and pipefail
# fails the check on a match (it did: `unzip -l` of the jar, whose .so is listed early).
cd "$FENCELOCK_ROOT"
PYTHON="${PYTHON:-python3}"

dist="$CARGO_TARGET_DIR/dist-ci"
# Built as ci/release.sh builds a release, but unoptimised (optimisation level 0 rather than
# 3): what this stage checks (packaging, linking against glibc 2.17, installing from the
# registries) does not depend on it. The wheel's build took 210 s at level 1 and takes 95 s at
# level 0 on this machine; the Node addon's, the C library's and the command's then reuse its
# core and dependencies (25 s).
CARGO_PROFILE_RELEASE_OPT_LEVEL=0 ci/release.sh --out "$dist"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL: up to 60 s
  for _ in $(seq 600); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing answers at $1" >&2
  return 1
}

# A PATH without cargo or rustc: what a user without a Rust toolchain has.
clean_path=""
IFS=: read -ra parts <<< "$PATH"
for d in "${parts[@]}"; do
  [ -x "$d/cargo" ] || [ -x "$d/rustc" ] || clean_path="${clean_path:+$clean_path:}$d"
done
if PATH="$clean_path" command -v cargo >/dev/null 2>&1; then
  echo "cargo still on the clean PATH" >&2; exit 1
fi

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
  --logfile "$work/redis.log" &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
url="redis://127.0.0.1:$redis_port"

echo "--- checksums"
(cd "$dist" && sha256sum -c --quiet SHA256SUMS)
ls "$dist"

echo "--- Python: pip install from a pypiserver index"
tools="$CARGO_TARGET_DIR/venv-dist-tools"
if [ ! -x "$tools/bin/pypi-server" ]; then
  rm -rf "$tools"
  "$PYTHON" -m venv "$tools"
  "$tools/bin/pip" install -q --disable-pip-version-check "pypiserver==2.4.2" "auditwheel==6.8.2"
fi
mkdir -p "$work/pypi"
cp "$dist"/*.whl "$dist"/fencelock-"$version".tar.gz "$work/pypi/"
pypi_port=$(free_port)
"$tools/bin/pypi-server" run -i 127.0.0.1 -p "$pypi_port" --disable-fallback "$work/pypi" \
  > "$work/pypiserver.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$pypi_port/simple/"
"$PYTHON" -m venv "$work/venv"
PATH="$clean_path" "$work/venv/bin/pip" install -q --disable-pip-version-check \
  --index-url "http://127.0.0.1:$pypi_port/simple/" --only-binary fencelock fencelock
(cd "$work" && PATH="$clean_path" FENCELOCK_URL="$url" "$work/venv/bin/python" - <<'EOF'
import os
import fencelock
where = fencelock._native.__file__
assert "/venv/" in where, where
with fencelock.LockManager(os.environ["FENCELOCK_URL"]) as m:
    lock = m.acquire("dist-python", 5)
    assert lock.fencing_token > 0
    lock.release()
print(f"python: fencelock {fencelock.__version__} from {where}: acquire/release ok")
EOF
)
# The wheel puts the fencelock command on the virtualenv's PATH (docs/cli.md).
cli_check() { # WHAT COMMAND...: `run` passes the command's exit code; the name is free after
  local what=$1; shift
  local got=0
  grep -qx "fencelock $version" <<<"$(PATH="$clean_path" "$@" --version)" \
    || { echo "$what: fencelock --version is not $version" >&2; exit 1; }
  PATH="$clean_path" "$@" run "dist-cli-$what" --server "$url" -- sh -c 'exit 3' || got=$?
  [ "$got" = 3 ] || { echo "$what: fencelock run exited $got, not the command's 3" >&2; exit 1; }
  got=0
  PATH="$clean_path" "$@" status "dist-cli-$what" --server "$url" >/dev/null || got=$?
  [ "$got" = 1 ] || { echo "$what: the lock was not released (status $got)" >&2; exit 1; }
  echo "$what: the fencelock command runs"
}
cli_check python "$work/venv/bin/fencelock"
# The drop-in ships in the wheel; without the [redis] extra it says which extra to install.
(cd "$work" && "$work/venv/bin/python" - <<'EOF'
import fencelock.compat
try:
    import fencelock.compat.redis_py  # noqa: F401
except ImportError as e:
    assert "fencelock[redis]" in str(e), e
    print("python: fencelock.compat ships; without redis-py it names the [redis] extra")
else:
    raise SystemExit("fencelock.compat.redis_py imported without redis-py installed")
EOF
)
installed_version=$("$work/venv/bin/python" -c 'import fencelock; print(fencelock.__version__)')
[ "$installed_version" = "$version" ] || { echo "installed $installed_version, built $version" >&2; exit 1; }
audit=$("$tools/bin/auditwheel" show "$dist"/*.whl)
echo "$audit"
grep -q 'manylinux_2_17_x86_64' <<<"$audit" || { echo "the wheel is not manylinux2014" >&2; exit 1; }

echo "--- Python: the sdist builds with a Rust toolchain and pip alone"
# (Debug profile and the workspace's target directory: the same build as a user's, faster.)
"$PYTHON" -m venv "$work/venv-sdist"
MATURIN_PEP517_ARGS="--profile dev" "$work/venv-sdist/bin/pip" wheel -q --disable-pip-version-check \
  --no-deps -w "$work/sdist-wheel" "$dist/fencelock-$version.tar.gz"
"$work/venv-sdist/bin/pip" install -q --disable-pip-version-check --no-deps "$work"/sdist-wheel/*.whl
(cd "$work" && "$work/venv-sdist/bin/python" -c 'import fencelock; print("sdist: built and imported fencelock", fencelock.__version__)')

echo "--- Node: npm install from a verdaccio registry"
verdaccio_dir="$CARGO_TARGET_DIR/verdaccio"
if [ ! -x "$verdaccio_dir/node_modules/.bin/verdaccio" ]; then
  rm -rf "$verdaccio_dir"
  mkdir -p "$verdaccio_dir"
  # Verdaccio 5: version 6 needs Node.js 22. The override stands in for the `node-fetch@cjs`
  # dist-tag (2.7.0) that one of its dependencies asks for and some registries lack.
  echo '{ "name": "verdaccio-for-ci", "private": true, "overrides": { "node-fetch": "2.7.0" } }' \
    > "$verdaccio_dir/package.json"
  (cd "$verdaccio_dir" && npm install --no-audit --no-fund --loglevel=error "verdaccio@5.33.0")
fi
npm_port=$(free_port)
mkdir -p "$work/verdaccio/storage"
cat > "$work/verdaccio/config.yaml" <<EOF
storage: $work/verdaccio/storage
auth:
  htpasswd:
    file: $work/verdaccio/htpasswd
    max_users: 1
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
packages:
  'fencelock':
    access: \$all
    publish: \$authenticated
  'fencelock-*':
    access: \$all
    publish: \$authenticated
  '**':
    access: \$all
    proxy: npmjs
logs: { type: stdout, format: pretty, level: warn }
EOF
"$verdaccio_dir/node_modules/.bin/verdaccio" --config "$work/verdaccio/config.yaml" \
  --listen "127.0.0.1:$npm_port" > "$work/verdaccio.log" 2>&1 &
pids+=($!)
registry="http://127.0.0.1:$npm_port/"
wait_http "${registry}-/ping"
token=$(curl -fsS -X PUT -H 'content-type: application/json' \
  -d '{"name":"ci","password":"ci-publish-only"}' "${registry}-/user/org.couchdb.user:ci" \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).token))')
npmrc="$work/npmrc"
printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\n' "$registry" "$npm_port" "$token" > "$npmrc"
for tgz in "$dist"/fencelock-linux-x64-gnu-"$version".tgz "$dist"/fencelock-"$version".tgz; do
  NPM_CONFIG_USERCONFIG="$npmrc" npm publish --silent "$tgz"
done
app="$work/app"
mkdir -p "$app"
(cd "$app" && npm init -y >/dev/null \
  && PATH="$clean_path" NPM_CONFIG_USERCONFIG="$npmrc" npm install --silent --no-audit --no-fund \
       "fencelock@$version" typescript@5.9.3 @types/node@20)
[ -f "$app/node_modules/fencelock-linux-x64-gnu/fencelock.linux-x64-gnu.node" ] \
  || { echo "npm did not install fencelock-linux-x64-gnu" >&2; exit 1; }
if ls "$app"/node_modules/fencelock/*.node >/dev/null 2>&1; then
  echo "the main package carries an addon; it should come from its platform package" >&2; exit 1
fi
(cd "$app" && PATH="$clean_path" FENCELOCK_URL="$url" node -e "
const { LockManager } = require('fencelock')
;(async () => {
  const m = new LockManager(process.env.FENCELOCK_URL)
  const lock = await m.acquire('dist-node', { ttl: 5000 })
  await lock.release()
  await m.close()
  console.log('node require: acquire/release ok, addon from', require.resolve('fencelock-linux-x64-gnu'))
})().catch((e) => { console.error(e); process.exit(1) })")
[ -x "$app/node_modules/.bin/fencelock" ] || { echo "npm did not link the fencelock bin" >&2; exit 1; }
cli_check node "$app/node_modules/.bin/fencelock"
(cd "$app" && PATH="$clean_path" node --input-type=module -e "
import { LockManager, LockLostError } from 'fencelock'
console.log('node import:', typeof LockManager, typeof LockLostError)")
# The node-redlock drop-in is a subpath of the published package (ioredis not installed here).
(cd "$app" && PATH="$clean_path" node -e "
const Redlock = require('fencelock/compat/redlock').default
if (typeof Redlock !== 'function') throw new Error('fencelock/compat/redlock has no default export')
console.log('node: the fencelock/compat/redlock subpath is published')")
cat > "$app/check.ts" <<'EOF'
import { LockManager, Lock, LockLostError } from 'fencelock'
async function main(): Promise<void> {
  const m: LockManager = new LockManager('redis://127.0.0.1:1')
  const lock: Lock | null = await m.tryAcquire('typed', { ttl: 1000 })
  const why: 'expired' | 'taken' | 'unreachable' | null = lock?.lostReason ?? null
  const e: LockLostError | undefined = undefined
  void [why, e]
}
void main
EOF
(cd "$app" && PATH="$clean_path" node node_modules/typescript/bin/tsc --noEmit --strict \
  --module commonjs --moduleResolution node10 --target es2022 --types node check.ts)
echo "node: tsc --noEmit ok"

echo "--- Node, bad case: a platform without a package gets a clear error"
cat > "$work/elsewhere.cjs" <<'EOF'
// Tells the loader it runs on another platform (FreeBSD on arm64).
Object.defineProperty(process, 'platform', { value: 'freebsd' })
Object.defineProperty(process, 'arch', { value: 'arm64' })
EOF
set +e
msg=$(cd "$app" && node -r "$work/elsewhere.cjs" -e "require('fencelock')" 2>&1)
status=$?
set -e
echo "$msg" | head -3
[ $status -ne 0 ] || { echo "loading on an unsupported platform did not fail" >&2; exit 1; }
grep -q 'fencelock has no native module for this platform (freebsd-arm64)' <<<"$msg" \
  && grep -q 'fencelock-freebsd-arm64' <<<"$msg" \
  && grep -q 'linux-x64-gnu, linux-arm64-gnu' <<<"$msg" \
  || { echo "the error does not name the platform and the packages" >&2; exit 1; }
set +e
msg=$(cd "$app" && rm -rf node_modules/fencelock-linux-x64-gnu && node -e "require('fencelock')" 2>&1)
status=$?
set -e
[ $status -ne 0 ] && grep -q "npm install fencelock-linux-x64-gnu@$version" <<<"$msg" \
  || { echo "a missing platform package is not named: $msg" >&2; exit 1; }
echo "node: the loader names the platform and the package"

echo "--- C: the archive, unpacked to a temporary prefix"
tar -C "$work" -xzf "$dist/fencelock-$version-x86_64-linux-gnu.tar.gz"
prefix="$work/fencelock-$version-x86_64-linux-gnu"
for f in include/fencelock.h lib/libfencelock.a lib/libfencelock.so "lib/libfencelock.so.$version" \
         lib/pkgconfig/fencelock.pc bin/fencelock share/man/man1/fencelock.1 \
         share/man/man1/fencelock-run.1 LICENSE LICENSE-MIT README.md; do
  [ -e "$prefix/$f" ] || { echo "the archive lacks $f" >&2; exit 1; }
done
grep -q 'SONAME.*libfencelock.so.0' <<<"$(readelf -d "$prefix/lib/libfencelock.so.$version")" \
  || { echo "no SONAME libfencelock.so.0" >&2; exit 1; }
grep -q "FENCELOCK_VERSION \"$version\"" "$prefix/include/fencelock.h"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion fencelock)" = "$version" ]
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror examples/c/request_id.c $(pkg-config --cflags --libs fencelock) \
  -o "$work/request_id_shared"
LD_LIBRARY_PATH="$prefix/lib" "$work/request_id_shared" "$url"
# shellcheck disable=SC2046
gcc -std=c11 -Wall -Wextra -Werror examples/c/request_id.c $(pkg-config --cflags fencelock) \
  "$(pkg-config --variable=libdir fencelock)/libfencelock.a" \
  $(pkg-config --static --libs-only-l fencelock | sed 's/-lfencelock //') -o "$work/request_id_static"
if grep -q libfencelock <<<"$(ldd "$work/request_id_static")"; then
  echo "the static build links libfencelock dynamically" >&2; exit 1
fi
"$work/request_id_static" "$url"
echo "c: shared and static builds from the archive run"
cli_check c-archive "$prefix/bin/fencelock"
grep -q 'not found' <<<"$(ldd "$prefix/bin/fencelock")" && { echo "bin/fencelock misses a library" >&2; exit 1; }
# Every binary shipped for Linux asks for nothing newer than glibc 2.17 (a build linked by the
# host's toolchain instead of zig asks for this machine's glibc).
node_addon=$(tar -tzf "$dist/fencelock-linux-x64-gnu-$version.tgz" | grep '\.node$')
tar -C "$work" -xzf "$dist/fencelock-linux-x64-gnu-$version.tgz" "$node_addon"
for bin in "$prefix/lib/libfencelock.so.$version" "$prefix/bin/fencelock" "$work/$node_addon"; do
  newest=$(readelf -V --wide "$bin" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
  [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" = 2.17 ] \
    || { echo "$(basename "$bin") needs glibc $newest, newer than 2.17" >&2; exit 1; }
done
echo "linux binaries: nothing newer than glibc 2.17 asked for"

echo "--- Java: deployed to a file:// Maven repository, used by a consumer project"
# The jars and POM of dist/ deployed as a release is (maven-deploy-plugin into a file://
# repository this stage makes); a separate project (ci/java-consumer) depends on
# io.fencelock:fencelock by its coordinates only, resolved from that repository into an empty
# local one, built and run on the clean PATH: the library comes out of the jar.
grep -q ' linux-x86-64/libfencelock.so$' <<<"$(unzip -l "$dist/fencelock-$version.jar")" \
  || { echo "the jar does not carry linux-x86-64/libfencelock.so" >&2; exit 1; }
maven_repo="$work/maven-repo"
ci/maven.sh deploy:deploy-file -Durl="file://$maven_repo" -DrepositoryId=dist \
  -Dfile="$dist/fencelock-$version.jar" -DpomFile="$dist/fencelock-$version.pom" \
  -Dsources="$dist/fencelock-$version-sources.jar" -Djavadoc="$dist/fencelock-$version-javadoc.jar"
for f in "" -sources -javadoc; do
  [ -f "$maven_repo/io/fencelock/fencelock/$version/fencelock-$version$f.jar" ] \
    || { echo "the repository lacks fencelock-$version$f.jar" >&2; exit 1; }
done
out=$(PATH="$clean_path" MAVEN_REPO_LOCAL="$work/m2-consumer" ci/maven.sh -f ci/java-consumer/pom.xml \
  -Dfencelock.repo="file://$maven_repo" -Dfencelock.version="$version" \
  -Dfencelock.build="$work/java-consumer" package exec:java -Dexec.args="$url")
echo "$out"
grep -q '^java consumer: acquired and released, fencing token [0-9]' <<<"$out" \
  || { echo "the Java consumer did not take and release its lock" >&2; exit 1; }
[ -f "$work/m2-consumer/io/fencelock/fencelock/$version/fencelock-$version.jar" ] \
  || { echo "the consumer did not resolve io.fencelock:fencelock from the repository" >&2; exit 1; }

echo "--- Go: a consumer module from a file:// module proxy"
# dist/go is the module as a proxy serves it; a separate module (ci/go-consumer) requires
# github.com/fencelock/fencelock/bindings-go by path and version only, downloaded into an
# empty module cache (the checksum database off for that path alone), built with cgo on the
# clean PATH (the static library comes out of the module) and run.
gomod="$work/go-consumer"
mkdir -p "$gomod"
cp ci/go-consumer/main.go "$gomod/"
printf 'module consumer\n\ngo 1.22\n\nrequire github.com/fencelock/fencelock/bindings-go v%s\n' \
  "$version" > "$gomod/go.mod"
go_env=(PATH="$clean_path" GOPROXY="file://$dist/go" GONOSUMDB=github.com/fencelock/fencelock/bindings-go
        GOFLAGS=-mod=mod GOMODCACHE="$work/go-modcache" GOCACHE="$work/go-cache")
(cd "$gomod" && env "${go_env[@]}" CGO_ENABLED=1 go build -o consumer .)
out=$("$gomod/consumer" "$url")
echo "$out"
grep -q '^go consumer: held dist-go with fencing token [0-9]' <<<"$out" \
  || { echo "the Go consumer did not take and release its lock" >&2; exit 1; }
echo "--- Go, bad case: without cgo the build says what it needs"
set +e
out=$(cd "$gomod" && env "${go_env[@]}" CGO_ENABLED=0 go build -o consumer-nocgo . 2>&1)
status=$?
set -e
[ $status -ne 0 ] && grep -q 'fencelock_needs_CGO_ENABLED_1_on_linux_amd64' <<<"$out" \
  || { echo "a build without cgo did not say why it failed: $out" >&2; exit 1; }
env GOMODCACHE="$work/go-modcache" go clean -modcache

echo "--- Rust: cargo install of the fencelock command"
cargo install --quiet --locked --debug --path cli --root "$work/cargo-root"
cli_check cargo-install "$work/cargo-root/bin/fencelock"

echo "--- bad case: a corrupted artifact fails the checksum"
cp -r "$dist" "$work/corrupt"
printf 'x' >> "$work/corrupt/fencelock-$version-x86_64-linux-gnu.tar.gz"
set +e
out=$(cd "$work/corrupt" && sha256sum -c SHA256SUMS 2>&1)
status=$?
set -e
[ $status -ne 0 ] && grep -q "fencelock-$version-x86_64-linux-gnu.tar.gz: FAILED" <<<"$out" \
  || { echo "a corrupted archive passed the checksum: $out" >&2; exit 1; }
echo "checksums: the corrupted archive is caught"
