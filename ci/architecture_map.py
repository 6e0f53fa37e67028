"""docs/ARCHITECTURE.md names every module (issue 53 item 7): each source file of the core,
the command line, the bindings, the model and the test kits is named there, in backticks, by
its file name (``label.rs``), its path under its directory (``url/cluster.rs``) or, for a
Java class, its class name (``NotAcquiredException``). ``lib.rs``, ``main.rs``, ``mod.rs``,
``__init__.py`` and tests are exempt (their directory is the module).

    python3 ci/architecture_map.py     # exit 1, naming each module the map does not list
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
DIRS = [
    "core/src",
    "cli/src",
    "bindings-c/src",
    "bindings-node/src",
    "bindings-python/src",
    "bindings-python/python/fencelock",
    "bindings-go",
    "bindings-java/src/main/java/io/fencelock",
    "model/src",
    "tests/chaos/src",
    "tests/harness/src",
]
SOURCE = re.compile(r"\.(rs|py|go|java|c|h)$")
EXEMPT = {"lib.rs", "main.rs", "mod.rs", "__init__.py", "tests.rs"}


def unlisted() -> list[str]:
    doc = DOC.read_text()
    named = set(re.findall(r"`([^`\s]+)`", doc))
    out = []
    for d in DIRS:
        base = ROOT / d
        for f in sorted(base.rglob("*")):
            rel = f.relative_to(base)
            if not SOURCE.search(f.name) or f.name in EXEMPT:
                continue
            if f.name.endswith("_test.go") or "lib" in rel.parts[:1] or "include" in rel.parts[:1]:
                continue
            forms = {f.name, str(rel), f.stem if f.suffix == ".java" else f.name}
            if not forms & named and not any(n.endswith("/" + str(rel)) for n in named):
                out.append(f"{d}/{rel}")
    return out


def main() -> int:
    missing = unlisted()
    for m in missing:
        print(f"docs/ARCHITECTURE.md does not name {m}")
    if missing:
        print(f"{len(missing)} module(s) missing from the map: say in a line what each is for")
        return 1
    print("every module is on the map")
    return 0


if __name__ == "__main__":
    sys.exit(main())
