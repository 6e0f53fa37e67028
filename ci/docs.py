#!/usr/bin/env python3
"""The docs' code blocks, run as a reader would paste them (issue 57 item 1).

Every fenced block of the files given (README.md and docs/guides/*.md in CI) whose language
this runner knows is run against a real redis-server that it starts on a free loopback port:

  python                 with $FENCELOCK_PYTHON (a virtualenv with the fencelock wheel)
  js, javascript, mjs    with node, `fencelock` resolved to $FENCELOCK_NODE_PACKAGE (an ES
                         module when the block uses `import`, else CommonJS)
  c                      compiled with cc against $FENCELOCK_C_PREFIX (pkg-config), then run
  java                   compiled with javac against $FENCELOCK_JAVA_CLASSPATH, its public
                         class run
  ts, typescript         compiled by tsc --strict (bindings-node's TypeScript and Node types;
                         an ES module, TypeScript 5.2's `await using` rewritten) and run by
                         node, `fencelock` resolved as for js
  go                     built as the main package of a module that requires the binding,
                         replaced by $FENCELOCK_GO_MODULE (bindings-go/, its library built)

The block's text is run as written, but for the server's address: `127.0.0.1:6379` (and
`port=6379`) become the test server's. A block that is only an excerpt says so in its info
string (```python excerpt); the mark is meant to be rare. Blocks of other languages (bash,
console, text, toml, rust, ts, ...) are not run here. A block that fails (exit status, or more
than a minute) fails the run, naming the file and line.

Usage: ci/docs.py FILE.md [FILE.md ...]   (the environment of target/mixed/env)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

LIMIT = 60
RUNS = {"python", "js", "javascript", "mjs", "ts", "typescript", "c", "java", "go"}


def blocks(path: Path) -> Iterator[Tuple[int, str, List[str], str]]:
    """(line, language, flags, text) of each fenced block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, info = m.group(1), (m.group(2) + " " + m.group(3)).strip()
        words = re.split(r"[\s,]+", info) if info else [""]
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        yield start, words[0].lower(), [w.lower() for w in words[1:]], "\n".join(body) + "\n"


def free_port() -> int:
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        if port != 6379:
            return port


class Server:
    """A redis-server of this run's own, stopped by its PID."""

    def __init__(self) -> None:
        self.port = free_port()
        binary = os.environ.get("REDIS_SERVER_BIN", "redis-server")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise SystemExit(f"ci/docs.py: redis-server on port {self.port} did not start")

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return out.stdout.strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def aimed(text: str, port: int) -> str:
    return text.replace("127.0.0.1:6379", f"127.0.0.1:{port}").replace("port=6379", f"port={port}")


def command(lang: str, text: str, work: Path) -> List[str]:
    env = os.environ
    if lang == "python":
        (work / "block.py").write_text(text)
        return [env["FENCELOCK_PYTHON"], "block.py"]
    if lang in ("js", "javascript", "mjs", "ts", "typescript"):
        modules = work / "node_modules"
        modules.mkdir(exist_ok=True)
        link = modules / "fencelock"
        if not link.exists():
            link.symlink_to(env["FENCELOCK_NODE_PACKAGE"])
        if lang in ("ts", "typescript"):
            return typescript(text, work)
        module = lang == "mjs" or re.search(r"^\s*import\s", text, re.M) is not None
        name = "block.mjs" if module else "block.cjs"
        (work / name).write_text(text)
        return ["node", name]
    if lang == "c":
        (work / "block.c").write_text(text)
        prefix = env["FENCELOCK_C_PREFIX"]
        pc = f"{prefix}/lib/pkgconfig"
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fencelock"], capture_output=True,
                               text=True, env={**env, "PKG_CONFIG_PATH": pc}, check=True).stdout.split()
        subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "block.c", "-o", "block", *flags,
                        f"-Wl,-rpath,{prefix}/lib"], cwd=work, check=True, timeout=LIMIT)
        return ["./block"]
    if lang == "java":
        m = re.search(r"public\s+(?:final\s+)?class\s+(\w+)", text)
        if not m:
            raise ValueError("a Java block needs a public class to run (or the excerpt mark)")
        cls = m.group(1)
        (work / f"{cls}.java").write_text(text)
        cp = env["FENCELOCK_JAVA_CLASSPATH"]
        subprocess.run(["javac", "-cp", cp, "-d", ".", f"{cls}.java"], cwd=work, check=True, timeout=LIMIT)
        return ["java", "-cp", f"{cp}:.", cls]
    if lang == "go":
        (work / "go.mod").write_text(
            "module docblock\n\ngo 1.22\n\n"
            "require github.com/fencelock/fencelock/bindings-go v0.0.0\n\n"
            f"replace github.com/fencelock/fencelock/bindings-go => {env['FENCELOCK_GO_MODULE']}\n")
        (work / "main.go").write_text(text)
        subprocess.run(["go", "build", "-o", "block", "."], cwd=work, check=True, timeout=3 * LIMIT)
        return ["./block"]
    raise ValueError(lang)


def typescript(text: str, work: Path) -> List[str]:
    """Compiles a TypeScript block with bindings-node's tsc (strict, an ES module) and returns
    the command that runs the output."""
    tools = Path(__file__).resolve().parent.parent / "bindings-node" / "node_modules"
    (work / "block.mts").write_text(text)
    config = {
        "compilerOptions": {
            "strict": True,
            "target": "ES2022",
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "lib": ["es2022", "esnext.disposable"],
            "types": ["node"],
            "typeRoots": [str(tools / "@types")],
            "noEmitOnError": True,
        },
        "files": ["block.mts"],
    }
    (work / "tsconfig.json").write_text(json.dumps(config))
    subprocess.run(["node", str(tools / "typescript" / "bin" / "tsc"), "-p", "."], cwd=work, check=True,
                   timeout=LIMIT)
    return ["node", "block.mjs"]


def run_block(path: Path, line: int, lang: str, text: str, server: Server) -> Optional[str]:
    """None when the block ran, else why it failed."""
    server.cli("FLUSHALL")
    work = Path(tempfile.mkdtemp(prefix="fencelock-docs-"))
    try:
        argv = command(lang, aimed(text, server.port), work)
        out = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=LIMIT)
        if out.returncode != 0:
            return f"exit {out.returncode}\n{out.stdout[-2000:]}{out.stderr[-2000:]}"
        return None
    except subprocess.TimeoutExpired:
        return f"still running after {LIMIT} s"
    except (subprocess.CalledProcessError, ValueError, KeyError) as e:
        return f"could not be built: {e}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(files: List[str]) -> int:
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    server = Server()
    ran = excerpts = 0
    failed: List[str] = []
    try:
        for name in files:
            path = Path(name)
            for line, lang, flags, text in blocks(path):
                if lang not in RUNS:
                    continue
                if "excerpt" in flags:
                    excerpts += 1
                    continue
                why = run_block(path, line, lang, text, server)
                ran += 1
                status = "ok" if why is None else "FAILED"
                print(f"{name}:{line}: {lang} block {status}", flush=True)
                if why is not None:
                    failed.append(f"{name}:{line} ({lang}): {why}")
    finally:
        server.stop()
    print(f"ci/docs.py: {ran} blocks ran, {len(failed)} failed, {excerpts} marked as excerpts")
    for f in failed:
        print(f"--- {f}", file=sys.stderr)
    return 1 if failed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
