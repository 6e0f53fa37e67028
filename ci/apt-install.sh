#!/usr/bin/env bash
# Installs Debian packages with apt-get, quietly, through sudo when not root: what a fresh
# machine lacks (ci/install-redis.sh, stage 40-c, bindings-java/test.sh).
#
# Usage: ci/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: ci/apt-install.sh PACKAGE..." >&2; exit 2; }
echo "installing with apt-get: $*"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
