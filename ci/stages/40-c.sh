#!/usr/bin/env bash
# C: the header is fresh (cbindgen) and the Rust-side FFI tests pass; then libfencelock is
# installed into a temporary prefix (make install) and the C tests, compiled with
# gcc -Wall -Wextra -Werror -pedantic -std=c11 against the installed header and library, run
# plain, under valgrind and with AddressSanitizer; the examples run linked both ways.
set -euo pipefail
cd "$FENCELOCK_ROOT"

missing=()
for tool in gcc pkg-config valgrind make redis-cli; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  pkgs=()
  for tool in "${missing[@]}"; do
    case "$tool" in redis-cli) pkgs+=(redis-tools) ;; *) pkgs+=("$tool") ;; esac
  done
  ci/apt-install.sh "${pkgs[@]}"
fi

cargo test --locked -p fencelock-c
bindings-c/tests/run.sh
