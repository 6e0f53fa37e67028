#!/usr/bin/env bash
# The servers our users run (issue 36, docs/SAFETY.md "Servers"): Valkey 8.1 and Redis 6.2,
# fetched and built by ci/servers.sh, beside the Redis 7.0 every other stage uses. On each:
# the conformance test (the model's runs through the scripts), the core's lock, semaphore,
# read-write lock, Redlock and many-name tests on standalone
# servers, and its Cluster tests (Redis 6.2 has no sharded pub/sub: wake-ups go by PUBLISH);
# slots moved and a master killed while holders of locks, semaphores and read-write locks
# contend on a cluster (tests/chaos/tests/cluster.rs); then a Redlock of one server of each kind under contention while each restarts, judged by
# the history checker; and servers' clocks jumped forward and back (tests/chaos/tests/clock.rs,
# Valkey under libfaketime): one of five keeps exclusion, a single server's jump past the TTL
# gives the overlap the assumptions exclude, with fencing tokens still in order; partitions
# between a cluster's nodes (tests/chaos/tests/cluster_partitions.rs) on Valkey 8.1. TLS is
# left out (the Redis 6.2 build has none; TLS does not depend on the server's version). The
# test binaries are the ones stage 10 built; stage 65 runs a short soak on each server.
set -euo pipefail
cd "$FENCELOCK_ROOT"
declare -A bin
while read -r name path; do bin[$name]=$path; done < <(ci/servers.sh)
core_tests=()
for t in single lean many semaphore rwlock election redlock tokens lost cluster cluster_family cluster_migrating; do
  core_tests+=(--test "$t")
done
for name in valkey-8.1 redis-6.2; do
  echo "--- $name: $("${bin[$name]}" --version)"
  REDIS_SERVER_BIN="${bin[$name]}" cargo test --locked --no-fail-fast -p fencelock "${core_tests[@]}" \
    -- --skip tls
  # The model's runs replayed through the scripts (docs/SAFETY.md "The model held to the scripts").
  REDIS_SERVER_BIN="${bin[$name]}" cargo test --locked -p fencelock --lib -- scripts::conformance
done
# Holders contending on a cluster while their names' slots move (both ways of moving keys) and
# while a master is killed, judged by the history checker (issue 51: Redis 6.2's cluster
# carries PUBLISH to every node while its count of listeners sees one).
for name in valkey-8.1 redis-6.2; do
  echo "--- cluster faults under contention, on $name"
  REDIS_SERVER_BIN="${bin[$name]}" cargo test --locked -p fencelock-chaos --test cluster -- --nocapture
done
echo "--- a Redlock of Redis 7.0, Valkey 8.1 and Redis 6.2"
FENCELOCK_MIXED_SERVERS="$(command -v redis-server):${bin[valkey-8.1]}:${bin[redis-6.2]}" \
  cargo test --locked -p fencelock-chaos --test servers -- --nocapture
# Redis 6.2 has neither --cluster-port nor --bind-source-addr (7.0), which the test uses to put
# each node's bus behind a proxy and to tell the cut-off master's bus connections apart.
echo "--- partitions between a cluster's nodes, on Valkey 8.1"
REDIS_SERVER_BIN="${bin[valkey-8.1]}" \
  cargo test --locked -p fencelock-chaos --test cluster_partitions -- --nocapture --test-threads=1
echo "--- servers' clocks jumped (libfaketime; Valkey 8.1: Debian's redis-server cannot run under it)"
FENCELOCK_CLOCK_SERVER="${bin[valkey-8.1]}" \
  cargo test --locked -p fencelock-chaos --test clock -- --nocapture --test-threads=1
