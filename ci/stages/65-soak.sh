#!/usr/bin/env bash
# The soak run, two minutes (ci/soak.sh; tests/chaos/tests/soak.rs): a single server, a
# Redlock of five and a Cluster of three masters, 40 s each, under rolling faults (servers
# frozen, partitioned, replies lost, packets dropped, killed and restarted empty; masters failed
# over and frozen), workers in all five languages, each run judged by the history checker and
# ended by a frozen holder whose late write the fenced store rejects. Then the same faults on
# the other servers our users run (ci/servers.sh: Valkey 8.1, Redis 6.2), 10 s a topology.
set -euo pipefail
cd "$FENCELOCK_ROOT"
ci/soak.sh --minutes 2
while read -r name path; do
  echo "--- the soak on $name ($("$path" --version | cut -d' ' -f1-3)), 10 s a topology"
  REDIS_SERVER_BIN="$path" ci/soak.sh --seconds 30
done < <(ci/servers.sh)
