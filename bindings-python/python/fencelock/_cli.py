"""The ``fencelock`` command (docs/cli.md), installed on PATH by the wheel: the same program as
the Rust binary, run inside the native module (which takes over this process's signals, INT
included, for the command it runs).

``python -m fencelock._cli ARGS`` runs it too.
"""

from __future__ import annotations

import sys

from fencelock import _native


def main() -> None:
    """Runs ``fencelock`` with this process's arguments and exits with its code."""
    sys.exit(_native._cli_main(["fencelock", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
