#!/usr/bin/env bash
# Cross-language exclusion (tests/chaos/tests/mixed.rs): worker processes in Rust, Python,
# Node, C, Java and Go (two of each) contend for the same names on five redis-servers, without
# and with a server killed and restarted, and on a cluster whose slots move (Redis 7.0, 6.2
# and Valkey 8.1); then (tests/chaos/tests/mixed_faults.rs) with a
# majority killed, a server stalled behind the proxy, latency near the TTL, a Python holder
# SIGKILLed, and a Python, Node, C, Java or Go holder SIGSTOPped past its TTL whose late write a
# fenced store rejects; the history checker's verdict over every hold is part of each
# verdict. Then the same workers in a network namespace of the test's own
# (tests/chaos/tests/partitions.rs): a minority of servers partitioned, a majority's replies
# lost, packets dropped at random (nftables; needs root). Builds the Python wheel
# (virtualenv), the Node addon, libfencelock (installed prefix), the Java jar with its
# worker and the Go worker when they are missing or stale, reusing what stages 20/30/45 built
# (tests/chaos/workers/build.sh), so `ci/test.sh mixed` also works alone.
# FENCELOCK_MIXED_REQUIRED=1: a missing language is a failure, not a skip. Then the
# cross-language demo (ci/demo.sh) runs once, short.
set -euo pipefail
cd "$FENCELOCK_ROOT"
tests/chaos/workers/build.sh
# shellcheck disable=SC1091
source target/mixed/env
export FENCELOCK_MIXED_REQUIRED=1
cargo test --locked -p fencelock-chaos --test mixed -- --test-threads=1 --nocapture
# Slots moving under workers of every language on Redis 6.2 and Valkey 8.1 too (issue 51:
# 6.2's cluster carries every wake-up to every node while its count of listeners sees one).
while read -r name path; do
  echo "--- workers of every language on a cluster whose slots move, on $name"
  REDIS_SERVER_BIN="$path" cargo test --locked -p fencelock-chaos --test mixed -- --test-threads=1 \
    --nocapture every_languages_workers_keep_exclusion_while_a_clusters_slots_move
done < <(ci/servers.sh redis-6.2 valkey-8.1)
cargo test --locked -p fencelock-chaos --test mixed_faults -- --test-threads=1 --nocapture
cargo test --locked -p fencelock-chaos --test partitions -- --test-threads=1 --nocapture
# The code blocks of the README, the docs and the guides, run as a reader would paste them, in their
# languages, against a server of their own (issue 57 item 1; ci/docs.py).
# The extras the Python blocks use (the same pins as stage 20: a no-op in its virtualenv).
"$FENCELOCK_PYTHON" -m pip install -q --disable-pip-version-check "redis==8.1.0" \
  "prometheus-client==0.26.0" "opentelemetry-api==1.45.2" "opentelemetry-sdk==1.45.2"
echo "--- ci/docs.py README.md docs/*.md docs/guides/*.md"
python3 ci/docs.py README.md docs/*.md docs/guides/*.md
echo "--- ci/demo.sh --seconds 4 --quiet"
ci/demo.sh --seconds 4 --quiet
