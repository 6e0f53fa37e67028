"""Leader election's benchmark (issue 54 item 6), on a redis-server started here on a free
loopback port (and an etcd, from Debian's packages, where it is installed), stopped by PID.

    python bench/election.py --rust-bin BIN --fencelock BIN [--quick | --smoke] [--out-dir DIR]

In one process (the Rust runner `fencelock-bench election-*`, each candidate and observer on
its own manager):

- hand-over: a leader resigns while a candidate waits in line and 10 observers follow: the
  time from the resign call until the candidate leads, and until each observer reports its
  term; then the new leader proclaims a value: the time until each observer reports it;
- fail-over: a leader in a child process is killed (SIGKILL) while a candidate waits and an
  observer follows: the time until the candidate leads, and how far past the term's end (the
  key's PTTL read at the kill) it took over;
- idle observers: 100 observers, each on its own manager, follow an election that does not
  change (a leader holding it, then nobody): the server's commands per second.

Through each tool's command line (processes, their output read here as it comes):
`fencelock elect` / `fencelock leader --watch` against `etcdctl elect` / `etcdctl elect -l`:
a leader stopped by SIGINT (it resigns) and killed by SIGKILL (a crash, the term's TTL the
same for both: etcdctl's session TTL, 60 s, which `etcdctl elect` does not let one change;
full runs only), the time until the waiting candidate's process says it leads, and until the
observer's process prints it.

Writes `results/election-latest.json` and `ELECTION.md` (the tables and issue 54's targets as
rows) under the out dir. No timing is asserted: the targets are reported, met or missed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import RedisServer, free_port, pct  # noqa: E402  (the suite's server, stopped by PID)

MODES: dict[str, dict[str, Any]] = {
    "full": {"rounds": 300, "observers": 10, "failovers": 5, "failover_ttl": 2000,
             "idle_observers": 100, "idle_window": 30000, "idle_ttl": 30000, "tool_rounds": 20,
             "tool_crash": True},
    "quick": {"rounds": 100, "observers": 10, "failovers": 3, "failover_ttl": 2000,
              "idle_observers": 100, "idle_window": 10000, "idle_ttl": 30000, "tool_rounds": 5,
              "tool_crash": False},
    "smoke": {"rounds": 5, "observers": 3, "failovers": 1, "failover_ttl": 1000,
              "idle_observers": 10, "idle_window": 1000, "idle_ttl": 3000, "tool_rounds": 1,
              "tool_crash": False},
}

# etcdctl elect's session TTL (concurrency.NewSession's default; the command has no flag).
ETCD_SESSION_TTL_S = 60
STEP_S = 30.0


def runner(rust_bin: str, scenario: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([rust_bin, f"election-{scenario}", *args], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"election-{scenario} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Proc:
    """A process whose output lines are read as they come, each with when it came."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.stderr = tempfile.TemporaryFile(mode="w+")
        # SIGINT is how a leader is told to resign: a run started in the background (`nohup
        # ... &`, a CI job) ignores it, and its children would inherit that.
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, bufsize=1, env=env, start_new_session=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), line.strip()))

    def until(self, pred: Callable[[str], bool], what: str) -> float:
        """When the first line `pred` accepts came (lines before it are dropped)."""
        deadline = time.monotonic() + STEP_S + ETCD_SESSION_TTL_S
        while True:
            try:
                at, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stderr.seek(0)
                raise RuntimeError(
                    f"no line saying {what} in time from {' '.join(self.argv)} (exit status "
                    f"{self.proc.poll()}; stderr: {self.stderr.read()[-2000:]!r})") from None
            if pred(line):
                return at

    def signal(self, sig: int) -> float:
        at = time.monotonic()
        self.proc.send_signal(sig)
        return at

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.stderr.close()


class Tool:
    """One tool's command line: candidates, an observer, how to tell who waits."""

    name: str

    def candidate(self, election: str, value: str) -> Proc: ...

    def observer(self, election: str) -> Proc: ...

    def waiting(self, election: str) -> int: ...

    def leads(self, p: Proc, value: str) -> float:
        return p.until(lambda line: line == f"leading {value}" or line == value, f"{value} leads")

    def seen(self, p: Proc, value: str) -> float: ...

    def after_crash(self, p: Proc) -> None:
        """Stops what a killed candidate left behind."""


class Ours(Tool):
    name = "fencelock elect"

    def __init__(self, fencelock: str, url: str, ttl_s: int) -> None:
        self.bin, self.ttl = fencelock, f"{ttl_s}s"
        self.env = {**os.environ, "FENCELOCK_SERVERS": url}
        self.children: dict[int, int] = {}

    def candidate(self, election: str, value: str) -> Proc:
        # The command prints when it runs (its shell's pid, which exec gives the sleep).
        cmd = f"echo leading {value} $$; exec sleep 3600"
        return Proc([self.bin, "elect", election, "--value", value, "--ttl", self.ttl, "--",
                     "sh", "-c", cmd], self.env)

    def leads(self, p: Proc, value: str) -> float:
        found: list[str] = []

        def match(line: str) -> bool:
            if line.startswith(f"leading {value} "):
                found.append(line.split()[-1])
                return True
            return False

        at = p.until(match, f"{value} leads")
        self.children[p.proc.pid] = int(found[0])
        return at

    def observer(self, election: str) -> Proc:
        return Proc([self.bin, "leader", election, "--watch", "--json"], self.env)

    def seen(self, p: Proc, value: str) -> float:
        return p.until(lambda line: json.loads(line).get("value") == value, f"{value} seen")

    def waiting(self, election: str) -> int:
        out = subprocess.run([self.bin, "status", election, "--json"], capture_output=True,
                             text=True, env=self.env, timeout=STEP_S)
        return int(json.loads(out.stdout).get("waiters") or 0)

    def after_crash(self, p: Proc) -> None:
        child = self.children.pop(p.proc.pid, None)
        if child is not None:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Etcd(Tool):
    name = "etcdctl elect"

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="fencelock-bench-etcd-")
        client, peer = free_port(), free_port()
        self.endpoint = f"127.0.0.1:{client}"
        self.server = subprocess.Popen(
            ["etcd", "--name", "bench", "--data-dir", self.dir,
             "--listen-client-urls", f"http://{self.endpoint}",
             "--advertise-client-urls", f"http://{self.endpoint}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"bench=http://127.0.0.1:{peer}", "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + STEP_S
        while self.ctl("endpoint", "health").returncode != 0:
            if self.server.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("etcd did not start")
            time.sleep(0.05)

    def ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["etcdctl", "--endpoints", self.endpoint, *args],
                              capture_output=True, text=True, timeout=STEP_S)

    def candidate(self, election: str, value: str) -> Proc:
        return Proc(["etcdctl", "--endpoints", self.endpoint, "elect", election, value])

    def observer(self, election: str) -> Proc:
        return Proc(["etcdctl", "--endpoints", self.endpoint, "elect", "-l", election])

    def seen(self, p: Proc, value: str) -> float:
        return p.until(lambda line: line == value, f"{value} seen")

    def waiting(self, election: str) -> int:
        keys = self.ctl("get", election, "--prefix", "--keys-only").stdout.split()
        return max(0, len(keys) - 1)

    def stop(self) -> None:
        if self.server.poll() is None:
            self.server.send_signal(signal.SIGKILL)
        self.server.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def until_waiting(tool: Tool, election: str) -> None:
    deadline = time.monotonic() + STEP_S
    while tool.waiting(election) < 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{tool.name}: the candidate never showed in the line")
        time.sleep(0.005)
    time.sleep(0.05)  # its wake-up subscription (or watch) completes after its place


def hand_overs(tool: Tool, rounds: int, crash: bool) -> dict[str, list[float]]:
    """Each round: the leader stopped (SIGINT: it resigns; SIGKILL: a crash) while the next
    candidate waits; until that candidate's process says it leads, and the observer's prints
    it (ms)."""
    election = f"bench-{'crash' if crash else 'resign'}-{time.monotonic_ns()}"
    observer = tool.observer(election)
    leader = tool.candidate(election, "c0")
    procs = [observer, leader]
    figures: dict[str, list[float]] = {"to_candidate": [], "to_observer": []}
    try:
        tool.leads(leader, "c0")
        tool.seen(observer, "c0")
        for r in range(1, rounds + 1):
            nxt = tool.candidate(election, f"c{r}")
            procs.append(nxt)
            until_waiting(tool, election)
            start = leader.signal(signal.SIGKILL if crash else signal.SIGINT)
            led = tool.leads(nxt, f"c{r}")
            seen = tool.seen(observer, f"c{r}")
            figures["to_candidate"].append((led - start) * 1e3)
            figures["to_observer"].append((seen - start) * 1e3)
            leader.proc.wait(timeout=STEP_S)
            tool.after_crash(leader)
            leader = nxt
    finally:
        for p in procs:
            p.stop()
            tool.after_crash(p)
    return figures


def spread(values: list[float]) -> dict[str, float | None]:
    """The median, p99 (nearest rank, as every runner) and worst of `values`, in ms."""
    if not values:
        return {"p50": None, "p99": None, "max": None, "n": 0}
    return {"p50": round(pct(values, 50), 3), "p99": round(pct(values, 99), 3),
            "max": round(max(values), 3), "n": len(values)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rust-bin", required=True)
    ap.add_argument("--fencelock", required=True, help="the fencelock command line")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    m = MODES[mode]
    results: dict[str, Any] = {"mode": mode, "date": time.strftime("%Y-%m-%d %H:%M"),
                               "redis": subprocess.run(["redis-server", "--version"],
                                                       capture_output=True, text=True).stdout.strip()}
    server = RedisServer()
    try:
        url = server.url
        results["handover"] = runner(args.rust_bin, "handover", "--servers", url, "--rounds",
                                     str(m["rounds"]), "--observers", str(m["observers"]))
        results["failover"] = runner(args.rust_bin, "failover", "--servers", url, "--rounds",
                                     str(m["failovers"]), "--ttl-ms", str(m["failover_ttl"]))
        results["idle"] = runner(args.rust_bin, "idle", "--servers", url, "--observers",
                                 str(m["idle_observers"]), "--window-ms", str(m["idle_window"]),
                                 "--ttl-ms", str(m["idle_ttl"]))
        tools: dict[str, Any] = {}
        etcd = Etcd() if shutil.which("etcd") and shutil.which("etcdctl") else None
        try:
            for tool in [Ours(args.fencelock, url, ETCD_SESSION_TTL_S), etcd]:
                if tool is None:
                    continue
                row = {"resign": {k: spread(v) for k, v in
                                  hand_overs(tool, m["tool_rounds"], crash=False).items()}}
                if m["tool_crash"]:
                    row["crash"] = {k: spread(v) for k, v in
                                    hand_overs(tool, 1, crash=True).items()}
                tools[tool.name] = row
        finally:
            if etcd is not None:
                etcd.stop()
        results["tools"] = tools
        results["etcd"] = subprocess.run(["etcd", "--version"], capture_output=True,
                                         text=True).stdout.split("\n")[0] if etcd else None
    finally:
        server.kill()
    out_dir = Path(args.out_dir)
    (out_dir / "results").mkdir(parents=True, exist_ok=True)
    (out_dir / "results" / "election-latest.json").write_text(json.dumps(results, indent=1))
    from election_report import report  # noqa: E402  (beside this file)

    (out_dir / "ELECTION.md").write_text(report(results))
    print(f"election: wrote {out_dir / 'ELECTION.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
