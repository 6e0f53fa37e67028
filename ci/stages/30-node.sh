#!/usr/bin/env bash
# Node: the napi-rs addon (debug build) and the `node --test` suite: every public method,
# mutual exclusion (async tasks, processes, node-redlock and ioredis SET NX PX on the same
# key), lost-lock signals, Redlock with a server killed, AbortSignal, the event loop, and the
# `npm pack` tarball installed in an empty directory running the examples and the
# TypeScript `await using` example compiled with `tsc --strict`, the redis-semaphore drop-in
# beside the real redis-semaphore. Then node-redlock's own tests
# (vendored in test/redlock/) against fencelock/compat/redlock, on servers and Redis Clusters
# started once per test file (test/redlock/run.mjs; its summary line says what passed and
# what failed as expected, and why); then redis-semaphore's own tests (test/redis-semaphore/)
# against the library and against fencelock/compat/redis-semaphore, the same way.
set -euo pipefail
cd "$FENCELOCK_ROOT/bindings-node"

npm ci --no-audit --no-fund
npx napi build --platform --js native.js --dts native.d.ts -- --locked

# native.js and native.d.ts are generated and committed: they must match the Rust source.
if git rev-parse --git-dir >/dev/null 2>&1 && ! git diff --quiet -- native.js native.d.ts; then
  echo "bindings-node/native.js or native.d.ts is stale: run 'npm run build:debug' and commit it" >&2
  git --no-pager diff --stat -- native.js native.d.ts >&2
  exit 1
fi

# The addon's own unit tests: the event loop's executor queue (event_loop.rs), the error
# classes, the option keys.
cargo test --locked -p fencelock-node --lib

# Three test files at a time (node's default is one fewer than the cores: one here). Each file
# starts servers of its own on free ports and mostly waits on them: the suite took 116 s one
# file at a time and takes 51 s three at a time on this two-core machine. A file (and each of
# its tests) that has not ended after 5 minutes fails, named, instead of hanging the run.
node --test --test-concurrency=3 --test-timeout=300000 test/*.test.mjs
# Again with calls on the runtime's threads instead of the JavaScript thread's event loop
# (bindings-node/src/promise.rs, event_loop.rs); not the files whose outcome cannot depend on
# the mode: the npm package's (packs, installs, type-checks the examples), the fencelock
# command's (a Rust binary) and the event loop's (it sets the mode itself, and runs children
# in both).
runtime_tests=()
for t in test/*.test.mjs; do
  case "$t" in
    test/package.test.mjs | test/cli.test.mjs | test/event-loop.test.mjs) ;;
    *) runtime_tests+=("$t") ;;
  esac
done
FENCELOCK_NODE_IO=runtime node --test --test-concurrency=3 --test-timeout=300000 "${runtime_tests[@]}"
node test/redlock/run.mjs
# redis-semaphore's own tests (vendored in test/redis-semaphore/) against the library itself
# and against fencelock/compat/redis-semaphore; one summary line each.
node test/redis-semaphore/run.mjs
