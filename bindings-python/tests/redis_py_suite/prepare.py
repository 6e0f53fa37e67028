"""Lays out redis-py's own lock tests for a run against fencelock.compat.redis_py.

Usage: python prepare.py SDIST_TARBALL OUT_DIR

Extracts from redis-py's sdist only what its lock tests need (their two test files, the
conftest modules they import and the pytest configuration of pyproject.toml, never the
``redis`` package itself, so the installed redis-py is the one tested against), then changes
exactly one line in each test file: the import of redis-py's ``Lock``, which becomes the
drop-in. Any other difference would make it a different suite, so the rewrite fails when the
line is not found exactly once.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile

# The files taken from the sdist (relative to its top directory).
FILES = [
    "pyproject.toml",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/ssl_utils.py",
    "tests/test_lock.py",
    "tests/test_asyncio/__init__.py",
    "tests/test_asyncio/conftest.py",
    "tests/test_asyncio/test_lock.py",
]

# The one line changed in each test file: redis-py's Lock becomes the drop-in.
IMPORT_REWRITES = {
    "tests/test_lock.py": (
        "from redis.lock import Lock\n",
        "from fencelock.compat.redis_py import Lock\n",
    ),
    "tests/test_asyncio/test_lock.py": (
        "from redis.asyncio.lock import Lock\n",
        "from fencelock.compat.redis_py import AsyncLock as Lock\n",
    ),
}


def main(tarball: str, out: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with tarfile.open(tarball) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
        for path in FILES:
            member = members.get(path)
            if member is None or not member.isfile():
                raise SystemExit(f"{tarball} has no {path}")
            source = tar.extractfile(member)
            assert source is not None
            dest = os.path.join(out, path)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(source.read())
    for path, (old, new) in IMPORT_REWRITES.items():
        dest = os.path.join(out, path)
        with open(dest, encoding="utf-8") as f:
            lines = f.readlines()
        hits = [i for i, line in enumerate(lines) if line == old]
        if len(hits) != 1:
            raise SystemExit(f"{path}: expected the line {old.strip()!r} once, found {len(hits)}")
        lines[hits[0]] = new
        with open(dest, "w", encoding="utf-8") as f:
            f.writelines(lines)
        print(f"{path}: {old.strip()!r} -> {new.strip()!r}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
