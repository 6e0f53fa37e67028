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
  echo "installing missing tools: ${missing[*]}"
  pkgs=()
  for tool in "${missing[@]}"; do
    case "$tool" in redis-cli) pkgs+=(redis-tools) ;; *) pkgs+=("$tool") ;; esac
  done
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

cargo test --locked -p fencelock-c
bindings-c/tests/run.sh
