#!/usr/bin/env python3
"""The benchmark orchestrator: fencelock against the peer libraries, in one run.

Starts its own redis-server processes on free loopback ports, runs every scenario for ours and
for each peer alternately (the order rotates every round), several rounds, and writes
``results/latest.json``, ``RESULTS.md`` and ``results/latest.png``. The runners it drives (one
per language, same command line) live in bench/rust, bench/python and bench/node; each prints
one JSON object as its last line.

Usage (normally through ci/bench.sh, which builds everything first):

    run.py --rust-bin PATH --python PATH [--quick] [--smoke] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

# --------------------------------------------------------------------------------------------
# Modes


@dataclass(frozen=True)
class Mode:
    name: str
    # Rounds of the uncontended scenarios: many short ones, so that the machine's slow spells
    # (its speed swings within minutes) hit every library alike; ratios are taken round by
    # round, between runs minutes apart at most (report.paired).
    rounds: int
    cycle_ms: int  # duration of one uncontended run
    contend_rounds: int
    contend_ms: int  # the measured window of one contention run
    count_ms: int  # then MONITOR counts the clients' commands, the workers still contending
    outage_rounds: int
    outage_ms: int
    scale_ms: int
    scale_tasks: tuple[int, ...]
    hold_count: int


FULL = Mode("full", 9, 700, 2, 4000, 1000, 3, 3000, 2000, (1, 16, 256), 10_000)
QUICK = Mode("quick", 2, 700, 1, 1500, 500, 1, 1500, 700, (1, 16, 256), 10_000)
SMOKE = Mode("smoke", 1, 200, 1, 500, 300, 1, 600, 200, (1, 16), 200)

HOLD_MS = 1
WORKERS = 8

# --------------------------------------------------------------------------------------------
# Redis servers, started and stopped here, by PID


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RespClient:
    """A minimal RESP2 client for the orchestrator's own few commands (INFO, PING, ...)."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def _reply(self) -> Any:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")

    @staticmethod
    def encode(*args: str | bytes) -> bytes:
        """One command in RESP, to send now or with others in one write (a pipeline)."""
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a.encode() if isinstance(a, str) else a
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        return b"".join(parts)

    def reply(self) -> Any:
        """The next reply on the connection (an error reply raises RuntimeError)."""
        return self._reply()

    def call(self, *args: str | bytes) -> Any:
        self.sock.sendall(self.encode(*args))
        return self._reply()


class RedisServer:
    def __init__(self, extra: list[str] | None = None) -> None:
        self.port = free_port()
        self.extra = list(extra or [])
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--maxclients", "20000",
                "--loglevel", "warning",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                c = RespClient(self.port, timeout=1)
                if c.call("PING") == "PONG":
                    c.close()
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def command_stats(self) -> dict[str, int]:
        c = RespClient(self.port)
        try:
            info = c.call("INFO", "commandstats").decode()
        finally:
            c.close()
        out: dict[str, int] = {}
        for line in info.splitlines():
            if line.startswith("cmdstat_"):
                name, fields = line[len("cmdstat_") :].split(":", 1)
                calls = int(fields.split(",")[0].split("=")[1])
                out[name] = calls
        return out

    def cpu_us(self) -> float:
        """The CPU time the server has used so far (user + system, INFO cpu), in µs: the
        server's own microsecond account, finer than /proc's clock ticks."""
        c = RespClient(self.port)
        try:
            info = c.call("INFO", "cpu").decode()
        finally:
            c.close()
        used = 0.0
        for line in info.splitlines():
            name, _, value = line.partition(":")
            if name in ("used_cpu_sys", "used_cpu_user"):
                used += float(value)
        return used * 1e6

    def flush(self) -> None:
        c = RespClient(self.port)
        try:
            c.call("FLUSHALL")
        finally:
            c.close()


class RedisCluster:
    """A Redis Cluster of `masters` masters and no replicas (each node a RedisServer, stopped
    by PID), joined by `redis-cli --cluster create`."""

    def __init__(self, masters: int = 3) -> None:
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]
        self.nodes: list[RedisServer] = []
        self.dirs: list[str] = []
        try:
            for _ in range(masters):
                d = tempfile.mkdtemp(prefix="fencelock-bench-cluster-")
                self.dirs.append(d)
                # The cluster bus on a free port of its own (by default port + 10000).
                self.nodes.append(RedisServer(args + ["--dir", d, "--cluster-port", str(free_port())]))
            subprocess.run(
                ["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                 "--cluster-replicas", "0", "--cluster-yes"],
                check=True, capture_output=True, timeout=60,
            )
            deadline = time.monotonic() + 30
            while not all(self._ok(n) for n in self.nodes):
                if time.monotonic() > deadline:
                    raise RuntimeError("the benchmark cluster did not become ready")
                time.sleep(0.05)
        except BaseException:
            self.kill()
            raise

    @staticmethod
    def _ok(n: RedisServer) -> bool:
        c = RespClient(n.port)
        try:
            return b"cluster_state:ok" in c.call("CLUSTER", "INFO")
        finally:
            c.close()

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes[:2])

    def kill(self) -> None:
        for n in self.nodes:
            n.kill()
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


class Monitor(threading.Thread):
    """Counts the commands a server receives from clients between two wall-clock instants,
    apart from those run inside Lua scripts (MONITOR marks them `[db lua]`)."""

    def __init__(self, port: int, start_s: float, end_s: float) -> None:
        super().__init__(daemon=True)
        self.start_s, self.end_s = start_s, end_s
        self.client = 0
        self.scripted = 0
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        self.stopped = False
        self.start()

    def run(self) -> None:
        buf = b""
        try:
            while not self.stopped:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return
                buf += chunk
                *lines, buf = buf.split(b"\r\n")
                for line in lines:
                    if not line.startswith(b"+") or b" [" not in line:
                        continue
                    try:
                        ts = float(line[1 : line.index(b" ")])
                    except ValueError:
                        continue
                    if not self.start_s <= ts < self.end_s:
                        continue
                    if b" lua] " in line:
                        self.scripted += 1
                    else:
                        self.client += 1
        except OSError:
            return

    def stop(self) -> tuple[int, int]:
        time.sleep(0.05)
        self.stopped = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(5)
        self.sock.close()
        return self.client, self.scripted


# --------------------------------------------------------------------------------------------
# Runners


@dataclass
class Runners:
    rust: list[str]
    python: list[str]
    node: list[str]

    def argv(self, lang: str) -> list[str]:
        return list(getattr(self, lang))


# Which impls each language's runner offers, and where they apply.
SINGLE_ONLY = {
    ("python", "redis-py"), ("python", "python-redis-lock"), ("python", "python-redis-lock-dropin"),
    ("rust", "floor-fenced"),
}
CYCLE_IMPLS = {
    # floor-fenced: the servers' limit for a cycle that keeps a fencing counter and a queue
    # check (limits.py).
    "rust": ["floor", "floor-fenced", "ours", "ours-observed", "ours-holder", "rslock"],
    "python": [
        "floor", "floor-asyncio", "ours", "ours-asyncio", "redis-py", "python-redis-lock",
        "python-redis-lock-dropin", "pottery", "pottery-asyncio",
    ],
    "node": ["floor", "ours", "redlock"],
}
CONTEND_IMPLS = {
    "rust": ["ours", "rslock"],
    "python": ["ours", "redis-py", "python-redis-lock", "python-redis-lock-dropin", "pottery"],
    "node": ["ours", "redlock"],
}
SCALE_IMPLS = {
    # floor-fenced: the guarantee floor that Rust at 256 tasks is held to (issue 56 item 5:
    # no leaner path keeps the line's order, bench/notes.md).
    "rust": ["ours", "ours-observed", "rslock", "floor-fenced"],
    "node": ["ours", "redlock"],
    # asyncio tasks in one event loop (issue 37 item 5); `hold` and the cluster runs are Rust
    # and Node only.
    "python": ["ours-asyncio", "redis-py-asyncio"],
}
HOLD_LANGS = ("rust", "node")


def applies(lang: str, impl: str, n_servers: int) -> bool:
    return n_servers == 1 or (lang, impl) not in SINGLE_ONLY


class RunFailed(Exception):
    pass


def children_cpu_us() -> float:
    """The CPU time (user + system) of every child process waited for so far, in µs."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1e6


def run_runner(runners: Runners, lang: str, args: list[str], timeout: float) -> dict[str, Any]:
    argv = runners.argv(lang) + args
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"{lang} {' '.join(args[:3])}: timed out after {timeout:.0f} s")
    out = p.stdout.decode(errors="replace").strip().splitlines()
    if p.returncode != 0 or not out:
        tail = p.stderr.decode(errors="replace").strip().splitlines()[-5:]
        raise RunFailed(f"{lang} {' '.join(args)}: exit {p.returncode}: {' | '.join(tail)}")
    try:
        result: dict[str, Any] = json.loads(out[-1])
    except json.JSONDecodeError:
        raise RunFailed(f"{lang} {' '.join(args[:3])}: last line is not JSON: {out[-1][:200]}")
    return result


# --------------------------------------------------------------------------------------------
# Statistics


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return float(s[k])


def summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "median": statistics.median(values),
        "p99": pct(values, 99),
        "min": min(values),
        "max": max(values),
    }


# --------------------------------------------------------------------------------------------
# Scenarios


@dataclass
class Bench:
    mode: Mode
    runners: Runners
    servers: list[RedisServer]
    langs: list[str]
    results: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def urls(self, n: int) -> str:
        return ",".join(s.url for s in self.servers[:n])

    def log(self, msg: str) -> None:
        print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    def attempt(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except RunFailed as e:
            self.failures.append(str(e))
            self.log(f"FAILED {what}: {e}")
            return None

    def schedule(
        self, table: dict[str, list[str]], n_servers: int, rounds: int
    ) -> Iterator[tuple[int, str, str]]:
        """(round, lang, impl) for every library of `table` that runs on `n_servers`, round
        after round, the order rotated by one each round so that no library always goes first."""
        impls = [
            (lang, impl)
            for lang in self.langs
            if lang in table
            for impl in table[lang]
            if applies(lang, impl, n_servers)
        ]
        for r in range(rounds):
            for lang, impl in impls[r % len(impls) :] + impls[: r % len(impls)]:
                yield r, lang, impl

    # 1-3: uncontended cycles --------------------------------------------------------------

    def cycles(self, n_servers: int) -> None:
        key = f"cycle_{n_servers}"
        raw: dict[str, list[dict[str, Any]]] = {}
        servers = self.servers[:n_servers]
        for r, lang, impl in self.schedule(CYCLE_IMPLS, n_servers, self.mode.rounds):
            self.log(f"cycle {n_servers} server(s) round {r + 1}: {lang}/{impl}")
            cpu_before = sum(s.cpu_us() for s in servers)
            res = self.attempt(
                f"cycle {lang}/{impl}",
                lambda: run_runner(
                    self.runners,
                    lang,
                    ["cycle", "--impl", impl, "--servers", self.urls(n_servers),
                     "--duration-ms", str(self.mode.cycle_ms), "--name", f"cycle-{lang}-{impl}"],
                    timeout=60 + self.mode.cycle_ms / 1000 * 3,
                ),
            )
            if res is not None:
                # The servers' CPU per cycle, summed over the servers: what the shared Redis
                # pays for each acquire + release (the runner's start-up costs it a handful of
                # commands, nothing beside thousands of cycles).
                cpu = sum(s.cpu_us() for s in servers) - cpu_before
                cycles = float(res.get("ops") or 0)
                per_cycle = cpu / cycles if cycles else None
                raw.setdefault(f"{lang}/{impl}", []).append(
                    {**res, "round": r, "server_cpu_us_per_cycle": per_cycle}
                )
        out: dict[str, Any] = {}
        for k, runs in raw.items():
            if not runs:
                continue
            by_round: list[float | None] = [None] * self.mode.rounds
            for x in runs:
                by_round[x["round"]] = float(x["ops_per_s"])
            out[k] = {
                "ops_per_s": summary([float(x["ops_per_s"]) for x in runs]),
                "ops_by_round": by_round,
                "lat_p50_us": summary([float(x["lat_us"]["p50"]) for x in runs]),
                "lat_p99_us": summary([float(x["lat_us"]["p99"]) for x in runs]),
                "errors": sum(int(x["errors"]) for x in runs),
                "rounds": len(runs),
            }
            cpu = [float(x["server_cpu_us_per_cycle"]) for x in runs if x.get("server_cpu_us_per_cycle")]
            if cpu:
                out[k]["server_cpu_us_per_cycle"] = summary(cpu)
        self.results[key] = out

    # 4: contention + fairness ---------------------------------------------------------------

    def roundtrip(self, n_servers: int) -> None:
        """The hand-off's limit on these servers (limits.py), measured just before their
        contention runs: the median of one measurement more than there are such runs."""
        import limits  # noqa: E402  (bench/limits.py)

        runs = []
        for i in range(self.mode.contend_rounds + 1):
            self.log(f"round trip {n_servers} server(s), {i + 1}")
            try:
                runs.append(limits.roundtrip(self.runners.rust[0], self.urls(n_servers), self.mode.contend_ms // 2, 60))
            except limits.LimitFailed as e:
                self.failures.append(str(e))
                self.log(f"FAILED round trip: {e}")
        if runs:
            self.results[f"rtt_{n_servers}"] = limits.merge(runs)

    def contention(self, n_servers: int) -> None:
        key = f"contend_{n_servers}"
        out: dict[str, Any] = {}
        for r, lang, impl in self.schedule(CONTEND_IMPLS, n_servers, self.mode.contend_rounds):
            self.log(f"contention {n_servers} server(s) round {r + 1}: {lang}/{impl}")
            res = self.attempt(f"contend {lang}/{impl}", lambda: self.contend_once(lang, impl, n_servers, r))
            if res is not None:
                out.setdefault(f"{lang}/{impl}", []).append(res)
        merged: dict[str, Any] = {}
        for k, rounds in out.items():
            agg: dict[str, Any] = {}
            for field_name in (
                "cs_per_s", "ceiling_per_s", "ceiling_fraction", "handoff_p50_us", "handoff_p99_us",
                "commands_per_cs", "server_commands_per_cs", "server_cpu_us_per_cs", "wait_p99_ms",
                "wait_max_ms", "worker_wait_p99_max_ms",
            ):
                vals = [float(x[field_name]) for x in rounds if x.get(field_name) is not None]
                if vals:
                    agg[field_name] = summary(vals)
            agg["overlaps"] = sum(int(x["overlaps"]) for x in rounds)
            agg["errors"] = sum(int(x["errors"]) for x in rounds)
            agg["unfinished_waits"] = sum(int(x.get("unfinished_waits", 0)) for x in rounds)
            agg["shares"] = rounds[-1]["shares"]
            agg["worker_wait_p99_ms"] = rounds[-1]["worker_wait_p99_ms"]
            agg["worker_wait_max_ms"] = rounds[-1]["worker_wait_max_ms"]
            agg["commands"] = rounds[-1]["commands"]
            agg["rounds"] = len(rounds)
            merged[k] = agg
        self.results[key] = merged

    def contend_once(self, lang: str, impl: str, n_servers: int, r: int) -> dict[str, Any]:
        name = f"contend-{lang}-{impl}-{n_servers}-{r}"
        duration = self.mode.contend_ms
        # The workers contend for the measured window and then for the counting window.
        total = duration + self.mode.count_ms
        startup = 3.0 if lang == "python" else 2.0
        start_at = time.time() + startup
        end_at = start_at + duration / 1000
        count_end = end_at + self.mode.count_ms / 1000
        argv = self.runners.argv(lang)
        procs = [
            subprocess.Popen(
                argv
                + ["contend", "--impl", impl, "--servers", self.urls(n_servers), "--name", name,
                   "--hold-ms", str(HOLD_MS), "--duration-ms", str(total),
                   "--start-at-ms", str(int(start_at * 1000)), "--worker", str(w)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ROOT,
            )
            for w in range(WORKERS)
        ]
        servers = self.servers[:n_servers]
        while time.time() < start_at:
            time.sleep(min(0.01, max(0.0, start_at - time.time())))
        before = [s.command_stats() for s in servers]
        cpu_before = sum(s.cpu_us() for s in servers)
        while time.time() < end_at:
            time.sleep(min(0.01, max(0.0, end_at - time.time())))
        cpu = sum(s.cpu_us() for s in servers) - cpu_before
        after = [s.command_stats() for s in servers]
        # MONITOR tells the clients' commands from the commands their scripts run (INFO
        # commandstats counts them together), but it slows the server down: every command is
        # formatted and sent to the monitor, ~0.1 ms more per handoff here, more for libraries
        # whose scripts run more commands. So it watches only the counting window, after the
        # measured one.
        monitors = [Monitor(s.port, end_at, count_end) for s in servers]
        while time.time() < count_end:
            time.sleep(min(0.01, max(0.0, count_end - time.time())))
        results = []
        problems = []
        for w, p in enumerate(procs):
            try:
                so, se = p.communicate(timeout=60 + total / 1000)
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
                problems.append(f"worker {w} did not stop")
                continue
            lines = so.decode(errors="replace").strip().splitlines()
            if p.returncode != 0 or not lines:
                tail = se.decode(errors="replace").strip().splitlines()[-3:]
                problems.append(f"worker {w}: exit {p.returncode}: {' | '.join(tail)}")
                continue
            try:
                results.append(json.loads(lines[-1]))
            except json.JSONDecodeError as e:
                problems.append(f"worker {w}: output is not JSON ({e})")
        counted = [m.stop() for m in monitors]
        if problems:
            raise RunFailed(f"contend {lang}/{impl}: " + "; ".join(problems))
        out = analyse_contention(results, before, after, counted, duration, self.mode.count_ms)
        # The servers' CPU per critical section of the measured window (summed over servers).
        cs = float(out.get("cs_per_s") or 0) * duration / 1000
        out["server_cpu_us_per_cs"] = cpu / cs if cs else None
        return out

    # 5: one of five servers killed mid-run ---------------------------------------------------

    def outage(self) -> None:
        raw: dict[str, list[dict[str, Any]]] = {}
        for r, lang, impl in self.schedule(CYCLE_IMPLS, 5, self.mode.outage_rounds):
            self.log(f"outage round {r + 1}: {lang}/{impl}")
            res = self.attempt(f"outage {lang}/{impl}", lambda: self.outage_once(lang, impl))
            if res is not None:
                raw.setdefault(f"{lang}/{impl}", []).append(res)
        out: dict[str, Any] = {}
        for k, runs in raw.items():
            out[k] = {
                f: summary([float(x[f]) for x in runs if x.get(f) is not None])
                for f in ("success_after", "lat_p50_healthy_us", "lat_p50_degraded_us",
                          "lat_p99_degraded_us", "degraded_ratio")
            }
            out[k]["rounds"] = len(runs)
        self.results["outage_5"] = out

    def outage_once(self, lang: str, impl: str) -> dict[str, Any]:
        victim = self.servers[4]
        duration = self.mode.outage_ms
        argv = self.runners.argv(lang) + [
            "cycle", "--impl", impl, "--servers", self.urls(5), "--duration-ms", str(duration),
            "--name", f"outage-{lang}-{impl}", "--samples",
        ]
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        # The runner says LOOP-START on stderr when its timed loop begins (after start-up and
        # warm-up): the kill falls in the middle of the loop.
        started = threading.Event()
        err_lines: list[bytes] = []

        def read_stderr() -> None:
            assert p.stderr is not None
            for line in p.stderr:
                if line.strip() == b"LOOP-START":
                    started.set()
                else:
                    err_lines.append(line)

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        if not started.wait(60):
            p.kill()
            p.wait()
            raise RunFailed(f"outage {lang}/{impl}: the runner never started its loop")
        time.sleep(duration / 2000)
        killed_at = time.time()
        victim.kill()
        try:
            assert p.stdout is not None
            so = p.stdout.read()
            p.wait(timeout=120 + duration / 1000)
            reader.join(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise RunFailed(f"outage {lang}/{impl}: timed out")
        finally:
            if not victim.alive():
                victim.start()
        lines = so.decode(errors="replace").strip().splitlines()
        if p.returncode != 0 or not lines:
            tail = b"".join(err_lines).decode(errors="replace").strip().splitlines()[-3:]
            raise RunFailed(f"outage {lang}/{impl}: exit {p.returncode}: {' | '.join(tail)}")
        try:
            res = json.loads(lines[-1])
        except json.JSONDecodeError as e:
            raise RunFailed(f"outage {lang}/{impl}: output is not JSON ({e})")
        samples = res.get("samples") or []
        if not samples:
            raise RunFailed(f"outage {lang}/{impl}: no samples")
        # The kill instant on the samples' timeline (milliseconds since the runner's loop began).
        kill_ms = killed_at * 1000 - float(res["loop_start_ms"])
        healthy = [s for s in samples if float(s[0]) + float(s[1]) / 1000 < kill_ms - 20]
        degraded = [s for s in samples if float(s[0]) > kill_ms + 20]
        ok_h = [float(s[1]) for s in healthy if s[2]]
        ok_d = [float(s[1]) for s in degraded if s[2]]
        return {
            "kill_ms": kill_ms,
            "success_before": len(ok_h) / len(healthy) if healthy else None,
            "success_after": len(ok_d) / len(degraded) if degraded else None,
            "lat_p50_healthy_us": statistics.median(ok_h) if ok_h else None,
            "lat_p50_degraded_us": statistics.median(ok_d) if ok_d else None,
            "lat_p99_degraded_us": pct(ok_d, 99) if ok_d else None,
            "degraded_ratio": (statistics.median(ok_d) / statistics.median(ok_h)) if ok_h and ok_d else None,
        }

    # 6: scale -----------------------------------------------------------------------------

    def scale(self) -> None:
        out: dict[str, Any] = {}
        for lang in [l for l in self.langs if l in SCALE_IMPLS]:
            for impl in SCALE_IMPLS[lang]:
                for tasks in self.mode.scale_tasks:
                    self.log(f"scale {lang}/{impl} tasks={tasks}")
                    server_before = self.servers[0].cpu_us()
                    client_before = children_cpu_us()
                    res = self.attempt(
                        f"scale {lang}/{impl}",
                        lambda: run_runner(
                            self.runners, lang,
                            ["scale", "--impl", impl, "--servers", self.urls(1), "--tasks", str(tasks),
                             "--duration-ms", str(self.mode.scale_ms)],
                            timeout=120,
                        ),
                    )
                    if res is not None:
                        # Per cycle: the server's CPU over the run (INFO cpu), and the runner
                        # process's own (its whole life, start-up and connecting included).
                        cycles = res["ops_per_s"] * self.mode.scale_ms / 1000
                        server_cpu = self.servers[0].cpu_us() - server_before
                        client_cpu = children_cpu_us() - client_before
                        out.setdefault(f"{lang}/{impl}", {})[str(tasks)] = {
                            "ops_per_s": res["ops_per_s"],
                            "peak_rss_kb": res["peak_rss_kb"],
                            "errors": res["errors"],
                            "server_cpu_us_per_cycle": server_cpu / cycles if cycles else None,
                            "client_cpu_us_per_cycle": client_cpu / cycles if cycles else None,
                        }
                if lang not in HOLD_LANGS:
                    continue
                self.log(f"hold {lang}/{impl} count={self.mode.hold_count}")
                res = self.attempt(
                    f"hold {lang}/{impl}",
                    lambda: run_runner(
                        self.runners, lang,
                        ["hold", "--impl", impl, "--servers", self.urls(1), "--count", str(self.mode.hold_count)],
                        timeout=300,
                    ),
                )
                if res is not None:
                    out.setdefault(f"{lang}/{impl}", {})["hold"] = {
                        k: res[k] for k in ("count", "held", "errors", "acquire_s", "release_s", "peak_rss_kb")
                    }
                for s in self.servers[:1]:
                    s.flush()
        self.results["scale"] = out

    # 7: scale on a cluster ------------------------------------------------------------------

    def scale_cluster(self) -> None:
        """Ours only, Rust and Node, distinct names, on a 3-master cluster (the peers' lock
        libraries here do not take a cluster: rslock has no cluster client, node-redlock would
        need an ioredis Cluster per server entry): beside the same runs on one standalone
        server. All servers of both runs share this machine's 2 cores with the runner. The
        standalone runs repeat what `scale` measured on purpose: each right after its cluster
        run, so that a ratio pairs runs seconds apart (this machine's speed swings within
        minutes, see notes.md)."""
        tasks_list = [t for t in self.mode.scale_tasks if t > 1]
        out: dict[str, Any] = {}
        self.log("scale on a cluster: starting 3 masters")
        cluster = RedisCluster(3)
        try:
            for lang in [l for l in self.langs if l in SCALE_IMPLS and l in HOLD_LANGS]:
                for tasks in tasks_list:
                    for where, url in (("cluster", cluster.url), ("standalone", self.urls(1))):
                        self.log(f"scale {lang}/ours tasks={tasks} on {where}")
                        res = self.attempt(
                            f"scale {lang}/ours on {where}",
                            lambda: run_runner(
                                self.runners, lang,
                                ["scale", "--impl", "ours", "--servers", url, "--tasks", str(tasks),
                                 "--duration-ms", str(self.mode.scale_ms)],
                                timeout=120,
                            ),
                        )
                        if res is not None:
                            out.setdefault(f"{lang}/ours", {}).setdefault(str(tasks), {})[where] = {
                                "ops_per_s": res["ops_per_s"],
                                "errors": res["errors"],
                            }
                        for s in self.servers[:1]:
                            s.flush()
        finally:
            cluster.kill()
        self.results["scale_cluster"] = out


def analyse_contention(
    workers: list[dict[str, Any]],
    before: list[dict[str, int]],
    after: list[dict[str, int]],
    counted: list[tuple[int, int]],
    measured_ms: int,
    count_ms: int,
) -> dict[str, Any]:
    """The figures of one contention run. Only the critical sections acquired in the measured
    window count; the clients' commands (MONITOR) are those of the counting window after it,
    divided by the critical sections acquired in that window. The windows are placed on the
    runners' clocks from the first request (the workers all start at the same instant), since
    the Node runner's timestamps are its monotonic clock."""
    every = sorted(
        ((int(h[0]), int(h[1]), int(h[2]), int(h[3]), int(w["worker"])) for w in workers for h in w["holds"]),
        key=lambda h: h[1],
    )
    t0 = min((h[0] for h in every), default=0)
    measured_end = t0 + measured_ms * 1000
    holds = [h for h in every if h[1] < measured_end]
    in_count_window = sum(1 for h in every if measured_end <= h[1] < measured_end + count_ms * 1000)
    n = len(holds)
    seconds = measured_ms / 1000
    errors = sum(int(w.get("errors", 0)) for w in workers)
    gaps = []
    overlaps = 0
    for prev, nxt in zip(holds, holds[1:]):
        if nxt[1] < prev[2]:
            overlaps += 1  # the next holder acquired before the previous one began releasing
        else:
            gaps.append(float(nxt[1] - prev[2]))
    held_us = [float(h[2] - h[1]) for h in holds]
    mean_hold = statistics.fmean(held_us) if held_us else 0.0
    ceiling = 1e6 / mean_hold if mean_hold else None
    cs_per_s = n / seconds
    waits: dict[int, list[float]] = {}
    for h in holds:
        waits.setdefault(h[4], []).append((h[1] - h[0]) / 1000)
    all_waits = [x for ws in waits.values() for x in ws]
    per_worker_count = {int(w["worker"]): 0 for w in workers}
    for h in holds:
        per_worker_count[h[4]] += 1
    server_cmds = 0
    by_cmd: dict[str, int] = {}
    for b, a in zip(before, after):
        for cmd, calls in a.items():
            d = calls - b.get(cmd, 0)
            if cmd == "info":
                d -= 1  # our own INFO after the run
            if d > 0:
                by_cmd[cmd] = by_cmd.get(cmd, 0) + d
                server_cmds += d
    client_cmds = sum(c for c, _ in counted)
    return {
        "critical_sections": n,
        "cs_per_s": cs_per_s,
        "mean_hold_us": mean_hold,
        "ceiling_per_s": ceiling,
        "ceiling_fraction": cs_per_s / ceiling if ceiling else None,
        "handoff_p50_us": statistics.median(gaps) if gaps else None,
        "handoff_p99_us": pct(gaps, 99) if gaps else None,
        "overlaps": overlaps,
        "errors": errors,
        # Workers still waiting for the lock well after the end, whose wait was abandoned.
        "unfinished_waits": sum(1 for w in workers if w.get("unfinished_wait")),
        "commands_per_cs": client_cmds / in_count_window if in_count_window else None,
        "count_window_critical_sections": in_count_window,
        "server_commands_per_cs": server_cmds / n if n else None,
        "commands": dict(sorted(by_cmd.items(), key=lambda kv: -kv[1])),
        "shares": {str(w): c / n if n else 0.0 for w, c in sorted(per_worker_count.items())},
        "wait_p99_ms": pct(all_waits, 99) if all_waits else None,
        "wait_max_ms": max(all_waits) if all_waits else None,
        "worker_wait_p99_ms": {str(w): pct(ws, 99) for w, ws in sorted(waits.items())},
        "worker_wait_max_ms": {str(w): max(ws) for w, ws in sorted(waits.items())},
        "worker_wait_p99_max_ms": max(pct(ws, 99) for ws in waits.values()) if waits else None,
    }


# --------------------------------------------------------------------------------------------
# Main


def redis_version() -> str:
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
    for part in out.split():
        if part.startswith("v="):
            return part[2:]
    return out.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rust-bin", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--node", default="node")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="one short round: checks that everything runs")
    ap.add_argument("--out-dir", default=str(BENCH), help="where results/ and RESULTS.md go")
    ap.add_argument("--langs", default="rust,python,node")
    ap.add_argument("--only", default="", help="comma-separated scenarios: cycle,contend,outage,scale,cluster")
    ap.add_argument("--build", default="release", help="recorded in the results")
    args = ap.parse_args()

    mode = SMOKE if args.smoke else QUICK if args.quick else FULL
    runners = Runners(
        rust=[args.rust_bin],
        python=[args.python, str(BENCH / "python" / "runner.py")],
        node=[args.node, str(BENCH / "node" / "runner.mjs")],
    )
    langs = [l for l in args.langs.split(",") if l]
    only = set(filter(None, args.only.split(","))) or {"cycle", "contend", "outage", "scale", "cluster"}
    out_dir = Path(args.out_dir)
    started = time.time()
    servers: list[RedisServer] = []
    try:
        servers = [RedisServer() for _ in range(5)]
        bench = Bench(mode, runners, servers, langs)
        bench.log(f"mode {mode.name}; servers on ports {[s.port for s in servers]}")
        if "cycle" in only:
            bench.cycles(1)
            bench.cycles(5)
        if "contend" in only:
            bench.roundtrip(1)
            bench.contention(1)
            bench.roundtrip(5)
            bench.contention(5)
        if "outage" in only:
            bench.outage()
        if "scale" in only:
            bench.scale()
        if "cluster" in only:
            bench.scale_cluster()
    finally:
        for s in servers:
            s.kill()
    doc = {
        "meta": {
            "mode": mode.name,
            "build": args.build,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "duration_s": round(time.time() - started, 1),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "redis_server": redis_version(),
            "hold_ms": HOLD_MS,
            "workers": WORKERS,
            "mode_settings": mode.__dict__,
            "versions": versions(runners, langs),
        },
        "failures": bench.failures,
        "results": bench.results,
    }
    (out_dir / "results").mkdir(parents=True, exist_ok=True)
    (out_dir / "results" / "latest.json").write_text(json.dumps(doc, indent=1) + "\n")
    sys.path.insert(0, str(BENCH))
    import report  # noqa: E402  (bench/report.py: the table and the plot)

    report.write(doc, out_dir, BENCH / "notes.md")
    bench.log(f"done in {time.time() - started:.0f} s; {len(bench.failures)} failure(s)")
    for f in bench.failures:
        print(f"  {f}", file=sys.stderr)
    return 1 if bench.failures else 0


def versions(runners: Runners, langs: list[str]) -> dict[str, str]:
    """The versions of the peer libraries and clients that ran, as installed."""
    out: dict[str, str] = {}
    if "python" in langs:
        code = (
            "import importlib.metadata as m, json\n"
            "names = ['fencelock', 'redis', 'hiredis', 'pottery', 'python-redis-lock']\n"
            "out = {}\n"
            "for n in names:\n"
            "    try: out['python/' + n] = m.version(n)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))\n"
        )
        p = subprocess.run([runners.python[0], "-c", code], capture_output=True, text=True)
        if p.returncode == 0:
            out.update(json.loads(p.stdout))
    if "node" in langs:
        for n in ("redlock", "ioredis"):
            pkg = BENCH / "node" / "node_modules" / n / "package.json"
            if pkg.exists():
                out[f"node/{n}"] = json.loads(pkg.read_text())["version"]
        out["node"] = subprocess.run([runners.node[0], "--version"], capture_output=True, text=True).stdout.strip()
    if "rust" in langs:
        lock = BENCH / "rust" / "Cargo.lock"
        if lock.exists():
            name = None
            for line in lock.read_text().splitlines():
                if line.startswith("name = "):
                    name = line.split('"')[1]
                elif line.startswith("version = ") and name in ("rslock", "redis", "tokio"):
                    out.setdefault(f"rust/{name}", line.split('"')[1])
    return out


if __name__ == "__main__":
    sys.exit(main())
