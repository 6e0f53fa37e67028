#!/usr/bin/env bash
# The soak run, two minutes (ci/soak.sh; tests/chaos/tests/soak.rs): a single server, a
# Redlock of five and a Cluster of three masters, 40 s each, under rolling faults (servers
# frozen, partitioned, replies lost, packets dropped, killed and restarted empty; masters failed
# over and frozen), workers in all four languages, each run judged by the history checker and
# ended by a frozen holder whose late write the fenced store rejects.
set -euo pipefail
cd "$FENCELOCK_ROOT"
ci/soak.sh --minutes 2
