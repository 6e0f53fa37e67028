#!/usr/bin/env python3
"""Writes the Go module github.com/fencelock/fencelock/bindings-go at a version as a Go module
proxy serves it (the GOPROXY protocol: @v/list, @v/VERSION.info, .mod and .zip), into a
directory that `GOPROXY=file://DIR` reads, with the prebuilt static library inside:

    ci/go-module.py VERSION STATIC_LIBRARY HEADER OUT_DIR

The zip holds bindings-go's sources (not its tests), include/fencelock.h and
lib/linux_amd64/libfencelock.a, each under MODULE@VERSION/, as `go mod download` unpacks it.
"""

from __future__ import annotations

import json
import sys
import time
import zipfile
from pathlib import Path

MODULE = "github.com/fencelock/fencelock/bindings-go"


def main(version: str, library: str, header: str, out: str) -> int:
    here = Path(__file__).resolve().parent.parent / "bindings-go"
    v = version if version.startswith("v") else "v" + version
    at = Path(out) / MODULE / "@v"
    at.mkdir(parents=True, exist_ok=True)
    prefix = f"{MODULE}@{v}/"
    files = sorted(p for p in here.iterdir() if p.is_file() and not p.name.endswith("_test.go")
                   and p.name != ".gitignore")
    with zipfile.ZipFile(at / f"{v}.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for p in files:
            z.write(p, prefix + p.name)
        z.write(header, prefix + "include/fencelock.h")
        z.write(library, prefix + "lib/linux_amd64/libfencelock.a")
    (at / f"{v}.mod").write_text((here / "go.mod").read_text())
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (at / f"{v}.info").write_text(json.dumps({"Version": v, "Time": stamp}))
    (at / "list").write_text(v + "\n")
    print(f"go module {MODULE}@{v} in {out}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
