"""The ``fencelock`` command (docs/cli.md), installed on PATH by the wheel: the same program as
the Rust binary, run inside the native module.

``python -m fencelock._cli ARGS`` runs it too.
"""

from __future__ import annotations

import signal
import sys

from fencelock import _native

# The signals the command passes on to the program it runs: Python's own handlers (SIGINT's
# KeyboardInterrupt) step aside for the command's.
_PASSED_ON = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")


def main() -> None:
    """Runs ``fencelock`` with this process's arguments and exits with its code."""
    for name in _PASSED_ON:
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    sys.exit(_native._cli_main(["fencelock", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
