#!/usr/bin/env bash
# Fault injection, Rust holders (tests/chaos): the fault-injecting proxy, the history checker,
# faults during contention on five servers (killed, restarted, stalled, slowed; holders paused
# and killed) and the classic mistakes of Redis locks (docs/PITFALLS.md). Debug build.
# FENCELOCK_SOAK=1 runs the contention tests longer; CI does not set it.
set -euo pipefail
cd "$FENCELOCK_ROOT"
# The cluster faults (tests/cluster.rs) run in stage 55-cluster, the Redlock of servers of
# several versions (tests/servers.rs) and the clock jumps (tests/clock.rs, on Valkey under
# libfaketime) in stage 57-servers, the network faults with workers in
# every language (tests/partitions.rs) in stage 60-mixed, the soak run in 65-soak.
targets=(--lib --bins)
for t in tests/chaos/tests/*.rs; do
  name="$(basename "$t" .rs)"
  case "$name" in cluster | cluster_partitions | servers | clock | partitions | soak) ;; *) targets+=(--test "$name") ;; esac
done
cargo test --locked -p fencelock-chaos "${targets[@]}"
