"""Starts real redis-server processes on free loopback ports for the tests.

The Python twin of the Rust harness (tests/harness): ``redis-server --port P --bind
127.0.0.1 --save '' --appendonly no --dir <tmp>``, waiting for PING; kill / SIGSTOP /
SIGCONT / restart; teardown kills exactly that PID. Never port 6379, never a kill by name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Callable, List, Optional, Sequence

import redis

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now (never 6379)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port != 6379:
            return port


class RedisServer:
    """One redis-server process owned by a test."""

    def __init__(self, extra_args: Sequence[str] = ()) -> None:
        """``extra_args`` go to redis-server after the defaults (``--tls-port``, ...)."""
        self.dir = tempfile.mkdtemp(prefix="fencelock-py-redis-")
        self.port = free_port()
        self.extra_args = list(extra_args)
        self.log = os.path.join(self.dir, "redis.log")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.start()

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT``."""
        return f"redis://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Starts the server (on the same port) and waits until it answers PING."""
        args = [
            REDIS_SERVER,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", self.dir,
            "--logfile", self.log,
            *self.extra_args,
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.client(socket_timeout=0.5).ping():
                    return
            except redis.exceptions.ConnectionError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{self.log_text()}")
            time.sleep(0.01)

    def client(self, socket_timeout: float = 5.0) -> "redis.Redis[bytes]":
        """A redis-py client of this server."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=socket_timeout)

    def kill(self) -> None:
        """SIGKILL, and wait for the process to go."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        """SIGSTOP: the server keeps its connections but answers nothing."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def cont(self) -> None:
        """SIGCONT after ``stop``."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def restart(self) -> None:
        """Kill, then start again on the same port (empty: no persistence)."""
        self.kill()
        self.start()

    def log_text(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        """Teardown: resumes (if stopped) and kills this server, removes its directory."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Sentinel:
    """One ``redis-server --sentinel`` watching ``mymaster`` (the twin of the Rust
    harness's), stopped by its PID."""

    def __init__(self, master_port: int) -> None:
        self.dir = tempfile.mkdtemp(prefix="fencelock-py-sentinel-")
        self.port = free_port()
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write(
                f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                f"logfile {os.path.join(self.dir, 'sentinel.log')}\n"
                f"sentinel monitor mymaster 127.0.0.1 {master_port} 2\n"
                "sentinel down-after-milliseconds mymaster 1000\n"
                "sentinel failover-timeout mymaster 3000\n"
                "sentinel parallel-syncs mymaster 1\n"
            )
        self.proc = subprocess.Popen([REDIS_SERVER, conf, "--sentinel"], stdout=subprocess.DEVNULL)
        wait_for(lambda: self.master_port() is not None, "the sentinel answers", 5.0)

    def client(self) -> "redis.Redis[bytes]":
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2.0)

    def master_port(self) -> Optional[int]:
        try:
            addr = self.client().execute_command("SENTINEL", "get-master-addr-by-name", "mymaster")
        except redis.RedisError:
            return None
        return int(addr[1]) if addr else None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(cond: Callable[[], object], what: str, limit: float) -> None:
    """Waits until ``cond()`` is true; fails naming ``what`` after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"after {limit} s, still not: {what}")
        time.sleep(0.01)


class SentinelSetup:
    """A master, its replica (in sync) and three sentinels watching it as ``mymaster``."""

    def __init__(self) -> None:
        self.master = RedisServer()
        self.replica = RedisServer(["--replicaof", "127.0.0.1", str(self.master.port)])
        self.sentinels: List[Sentinel] = []
        wait_for(lambda: self._info(self.replica, "master_link_status:up"), "the replica is in sync", 10.0)
        self.sentinels = [Sentinel(self.master.port) for _ in range(3)]

    @staticmethod
    def _info(server: RedisServer, needle: str) -> bool:
        key, value = needle.split(":", 1)
        return str(server.client().info("replication").get(key)) == value

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/mymaster"

    def failover(self) -> None:
        """Forces a failover; returns once the replica is the master everywhere."""

        def accepted() -> bool:
            try:
                self.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
                return True
            except redis.RedisError:
                return False

        wait_for(accepted, "the sentinel accepts FAILOVER", 20.0)
        wait_for(
            lambda: all(s.master_port() == self.replica.port for s in self.sentinels)
            and self._info(self.replica, "role:master")
            and self._info(self.master, "role:slave"),
            "the replica is promoted",
            20.0,
        )

    def close(self) -> None:
        for s in self.sentinels:
            s.close()
        self.replica.close()
        self.master.close()


class RedisClusterSetup:
    """A Redis Cluster of 3 masters and 3 replicas on free loopback ports (the twin of the
    Rust harness's ``RedisCluster``): ``redis-server --cluster-enabled yes`` each, joined by
    ``redis-cli --cluster create --cluster-replicas 1``; every node stopped by its PID."""

    def __init__(self, masters: int = 3, replicas: int = 1) -> None:
        args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "1000"]
        self.nodes: List[RedisServer] = []
        try:
            # Each node's cluster bus on a free port of its own (by default the node's port +
            # 10000, which may be taken, or past 65535).
            self.nodes = [RedisServer(args + ["--cluster-port", str(free_port())])
                          for _ in range(masters * (1 + replicas))]
            subprocess.run(
                [shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                 *[f"127.0.0.1:{n.port}" for n in self.nodes],
                 "--cluster-replicas", str(replicas), "--cluster-yes"],
                check=True, capture_output=True, timeout=60,
            )
            wait_for(self._ready, "every node of the cluster is ok and in sync", 30.0)
        except BaseException:
            self.close()
            raise

    def _ready(self) -> bool:
        for n in self.nodes:
            try:
                info = n.client(socket_timeout=0.5).execute_command("CLUSTER", "INFO")
                repl = n.client(socket_timeout=0.5).info("replication")
            except redis.RedisError:
                return False
            text = info.decode() if isinstance(info, bytes) else str(info)
            if "cluster_state:ok" not in text:
                return False
            if repl.get("role") == "slave" and repl.get("master_link_status") != "up":
                return False
        return True

    @property
    def url(self) -> str:
        """``redis+cluster://`` naming two of the nodes (the others are found from them)."""
        return f"redis+cluster://127.0.0.1:{self.nodes[0].port},127.0.0.1:{self.nodes[1].port}"

    def client(self) -> "redis.RedisCluster[bytes]":
        """A redis-py cluster client (routes each key to its master)."""
        return redis.RedisCluster(host="127.0.0.1", port=self.nodes[0].port, socket_timeout=5.0)

    def close(self) -> None:
        for n in self.nodes:
            n.close()
