"""The ``fencelock`` command the wheel installs (issue 35 item 7): the console script runs the
CLI crate inside the native module, so a Python service's image has the command on PATH with
``pip install fencelock`` alone. Its behaviour is tested in depth in cli/tests; here, that the
installed script is that program: exit codes, the environment, signals, "not acquired"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import fencelock
from redis_fixture import RedisServer

# The console script pip put beside this interpreter.
SCRIPT = str(Path(sys.executable).parent / "fencelock")


# Runs the script with SIGINT at its default: a shell without job control starts a background
# command (`cmd &`) with SIGINT ignored, and Python, then fencelock, leave an ignored signal
# ignored, so the signal test would depend on how the test run was started.
DEFAULT_SIGINT = ["-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                        "os.execv(sys.argv[1], sys.argv[1:])"]


def fencelock_cmd(server: RedisServer, *args: str) -> List[str]:
    return [sys.executable, *DEFAULT_SIGINT, SCRIPT, args[0], "--server", server.url, *args[1:]]


def test_the_script_is_installed_and_knows_its_version() -> None:
    out = subprocess.run([SCRIPT, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"fencelock {fencelock.__version__}"
    bad = subprocess.run([SCRIPT, "run", "x"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 64 and "COMMAND" in bad.stderr


def test_run_passes_the_exit_code_and_the_fencing_token(server: RedisServer, tmp_path: Path) -> None:
    env_file = tmp_path / "env"
    script = f'echo "$FENCELOCK_NAME $FENCELOCK_FENCING_TOKEN" > {env_file}; exit 42'
    out = subprocess.run(fencelock_cmd(server, "run", "py-cli", "--", "sh", "-c", script),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 42, out.stderr
    name, token = env_file.read_text().split()
    assert name == "py-cli" and int(token) >= 1
    # Released: free, and the Python library sees the same lock.
    status = subprocess.run(fencelock_cmd(server, "status", "py-cli"), capture_output=True, text=True, timeout=60)
    assert status.returncode == 1, status.stderr
    with fencelock.LockManager(server.url) as m:
        held = m.acquire("py-cli", 10)
        busy = subprocess.run(fencelock_cmd(server, "run", "py-cli", "--no-wait", "--", "true"),
                              capture_output=True, text=True, timeout=60)
        assert busy.returncode == 75, busy.stderr
        held.release()


def test_signals_reach_the_command_not_python(server: RedisServer, tmp_path: Path) -> None:
    up = tmp_path / "up"
    script = f"trap 'exit 9' INT; echo up > {up}; while :; do sleep 0.05; done"
    proc = subprocess.Popen(fencelock_cmd(server, "run", "py-sig", "--", "sh", "-c", script),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not up.exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    # The command's own exit, no KeyboardInterrupt traceback from the script.
    assert proc.returncode == 9, err
    assert "Traceback" not in err
