"""Lays out python-redis-lock's own tests for a run against fencelock's drop-in, and for the
control run against the library itself.

Usage: python prepare.py SDIST_TARBALL OUT_DIR

Extracts from python-redis-lock's sdist only what its tests need (``pytest.ini`` and
``tests/{conftest,config,helper,test_redis_lock}.py``, never the ``redis_lock`` package
itself) into OUT_DIR/control, and the same into OUT_DIR/dropin plus one file,
``tests/redis_lock.py``, which makes the module name the suite imports (``import redis_lock``,
``from redis_lock import Lock``, in the tests and in the helper processes they start) the
drop-in: not one line of the suite is changed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile

FILES = [
    "pytest.ini",
    "tests/conftest.py",
    "tests/config.py",
    "tests/helper.py",
    "tests/test_redis_lock.py",
]

SHIM = '''"""python-redis-lock's module name, answered by fencelock's drop-in (written by
fencelock's bindings-python/tests/python_redis_lock_suite/prepare.py)."""
from fencelock.compat.python_redis_lock import *  # noqa: F401,F403
from fencelock.compat.python_redis_lock import __version__, reset_all  # noqa: F401

reset_all_script = None
'''


def main(tarball: str, out: str) -> None:
    shutil.rmtree(out, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
        for flavour in ("control", "dropin"):
            for path in FILES:
                member = members.get(path)
                if member is None or not member.isfile():
                    raise SystemExit(f"{tarball} has no {path}")
                source = tar.extractfile(member)
                assert source is not None
                dest = os.path.join(out, flavour, path)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "wb") as f:
                    f.write(source.read())
    with open(os.path.join(out, "dropin", "tests", "redis_lock.py"), "w", encoding="utf-8") as f:
        f.write(SHIM)
    print(f"python-redis-lock's tests laid out in {out}/control and {out}/dropin")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
