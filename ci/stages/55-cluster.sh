#!/usr/bin/env bash
# Redis Cluster (issue 19): every test starts its own cluster of 3 masters and 3 replicas on
# free loopback ports (redis-server --cluster-enabled yes, redis-cli --cluster create) and
# stops its nodes by PID. The core on a cluster (operations, the key layout against CLUSTER
# KEYSLOT, sharded wake-ups in order, resharding under a held lock, replica acknowledgment
# through a master's failover and its absence shown losing a lock, Redlock with a cluster),
# then faults while holders contend, judged by the history checker (slots migrated mid-run; a
# master killed mid-run with replica acknowledgment). Semaphores and read-write locks on a
# cluster (core/tests/cluster_family.rs): one slot, sharded handoffs, a failover with
# replica acknowledgment. Scripts never run half on a migrating slot (core/tests/
# cluster_migrating.rs: the slot guard). The Python, Node and C cluster tests run
# in their binding's stage, the cross-language one in 60-mixed.
set -euo pipefail
cd "$FENCELOCK_ROOT"
cargo test --locked -p fencelock --test cluster --test cluster_family --test cluster_migrating
cargo test --locked -p fencelock-chaos --test cluster -- --nocapture
# A master cut off from the others on the cluster bus (proxies before every node's bus), one
# way and both ways, while holders contend (issue 36 item 4; docs/SAFETY.md "Network faults").
cargo test --locked -p fencelock-chaos --test cluster_partitions -- --test-threads=1 --nocapture
