#!/usr/bin/env bash
# Installs redis-server (and redis-sentinel, redis-cli), and the tools of the network-fault
# tests (ip, nft, libfaketime), with the system package manager when missing. Tests start their own
# servers on free loopback ports; nothing here starts one.
set -euo pipefail
# openssl: the TLS tests generate their own certificates with it.
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server redis-tools)
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
