#!/usr/bin/env bash
# Fetches a package's sdist from PyPI once, pinned by its sha256 (pip checks the hash while
# downloading, sha256sum checks it again, and a cached copy is checked before reuse), and
# prints its path. For the peer suites (redis_py_suite, python_redis_lock_suite).
#
# Usage: fetch_sdist.sh PYTHON DIR REQUIREMENT SHA256 FILE
#   e.g. fetch_sdist.sh python target/x/sdist redis==8.1.0 6e1a... redis-8.1.0.tar.gz
set -euo pipefail
python=$1 dir=$2 requirement=$3 sha256=$4 file=$5
mkdir -p "$dir"
sdist="$dir/$file"
checksum_ok() { [ -f "$sdist" ] && echo "$sha256  $sdist" | sha256sum --check --status; }
if ! checksum_ok; then
  rm -f "$sdist"
  echo "$requirement --hash=sha256:$sha256" > "$dir/requirements.txt"
  "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
fi
checksum_ok || { echo "$file: sha256 mismatch" >&2; exit 1; }
echo "$sdist"
