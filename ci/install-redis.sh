#!/usr/bin/env bash
# Installs redis-server (and redis-sentinel, redis-cli), and the tools of the network-fault
# tests (ip, nft, libfaketime), with the system package manager when missing. Tests start their own
# servers on free loopback ports; nothing here starts one.
#   ci/install-redis.sh                  what the tests need
#   ci/install-redis.sh --servers-only   redis-server and redis-cli alone (ci/demo.sh)
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server redis-tools)
if [ "${1:-}" = --servers-only ]; then
  [ ${#missing[@]} -eq 0 ] || "$(dirname "$0")/apt-install.sh" "${missing[@]}"
  exit 0
fi
# openssl: the TLS tests generate their own certificates with it.
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# ip and nft: the network faults of tests/chaos/tests/partitions.rs (namespaces, nftables).
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
# libfaketime: the clock jumps of tests/chaos/tests/clock.rs.
ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1 || missing+=(libfaketime)
[ -e /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
"$(dirname "$0")/apt-install.sh" "${missing[@]}"
command -v redis-server >/dev/null
redis-server --version
