"""Run snippets in processes forked from preloaded servers (server.py).

A server pays for the interpreter and ``import torch`` once; every snippet
still gets its own process. ``run_batches`` starts one server per batch,
all at once, so with two batches (a snippet's first and second run) the
two imports overlap on two cores and the two runs of a snippet come from
different interpreters (different hash seeds and addresses), which makes
the nondeterminism check sharper at no extra wall-clock cost.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SERVER = Path(__file__).with_name("server.py")
#: Temporary folders: snippet-engine-<pid of the engine>-<random>.
TMP_PREFIX = "snippet-engine-"
TABLES_ENV = "MHA_REF_TABLES_FILE"
#: Seconds a server may take to import torch and mha_ref.
STARTUP_LIMIT = 300.0
#: The hash seed of each server (a forked child inherits its server's).
HASH_SEEDS = (0, 1)
#: Slack on top of the snippet timeout before a silent server is killed.
SILENCE_SLACK = 60.0


@dataclass
class Run:
    """What one run of one snippet did."""

    stdout: str = ""
    stderr: str = ""
    tables: str = ""  # the JSON lines publish_table wrote
    reads: list[str] = field(default_factory=list)  # files under the root
    exit: int | None = None  # negative: killed by that signal
    timed_out: bool = False
    seconds: float = 0.0
    failure: str = ""  # the runner itself failed (no snippet result)
    collateral: bool = False  # not run: another snippet killed the runner

    @property
    def ok(self) -> bool:
        return not self.failure and not self.timed_out and self.exit == 0


@dataclass
class _Server:
    index: int
    jobs: list[Path]
    proc: subprocess.Popen
    log: Path
    files: Path
    buffer: bytes = b""
    ready: dict | None = None
    done: bool = False
    deadline: float = 0.0
    results: dict[int, Run] = field(default_factory=dict)
    started: set[int] = field(default_factory=set)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


def run_batches(
    root: Path,
    batches: list[list[Path]],
    *,
    timeout: float,
    concurrency: int,
    preload: list[str] | tuple[str, ...] = (),
) -> list[list[Run]]:
    """Run each batch of snippet paths on its own fork server.

    Returns, per batch, one ``Run`` per path in the same order. Never
    raises for a snippet's or a server's failure: those are in the Runs.
    """
    _remove_stale_folders()
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
    servers: list[_Server] = []
    restore = _exit_on_sigterm()
    try:
        for i, jobs in enumerate(batches):
            if jobs:
                servers.append(_start(root, i, jobs, tmp, preload))
        for server in servers:
            _submit(server, timeout, concurrency)
        _collect(servers, timeout)
        out = [[Run() for _ in jobs] for jobs in batches]
        for server in servers:
            for j in range(len(server.jobs)):
                out[server.index][j] = server.results.get(j) or _lost(
                    root, server, j
                )
        return out
    finally:
        for server in servers:
            _stop(server)
        shutil.rmtree(tmp, ignore_errors=True)
        restore()


def _exit_on_sigterm():
    """SIGTERM unwinds (so ``finally`` removes the temporary folder and
    stops the servers) instead of killing outright; returns the undo.

    Only in the main thread (``mkdocs serve`` builds in another, where
    Python allows no signal handler): there, and after SIGKILL, the
    next run removes the folder (``_remove_stale_folders``).
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        return lambda: None
    if previous not in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, previous)  # someone else's: keep it
        return lambda: None
    return lambda: signal.signal(signal.SIGTERM, previous)


def _remove_stale_folders() -> None:
    """Remove the temporary folders of engine runs whose process died."""
    base = Path(tempfile.gettempdir())
    for folder in base.glob(f"{TMP_PREFIX}*-*"):
        pid = folder.name[len(TMP_PREFIX) :].split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _lost(root: Path, server: _Server, j: int) -> Run:
    """The Run of a job the server never answered: who is to blame.

    A server dies with the snippets it was running (one that kills its
    parent, a crash); those are named as the cause, the jobs it had not
    started yet are named as collateral.
    """
    culprits = [
        server.jobs[i].relative_to(root).as_posix()
        for i in sorted(server.started)
        if i not in server.results
    ]
    if j in server.started:
        return Run(
            failure="the snippet runner died while this snippet ran "
            "(does it kill its parent process, os.getppid()?)\n"
            + server.log_tail()
        )
    if culprits:
        return Run(
            failure="not run: the snippet runner was killed while "
            f"running {', '.join(culprits)}",
            collateral=True,
        )
    return Run(
        failure="the snippet runner stopped before this snippet "
        "finished\n" + server.log_tail()
    )


def _start(root, index, jobs, tmp, preload) -> _Server:
    files = tmp / f"server{index}"
    files.mkdir()
    log = files / "server.log"
    env = dict(os.environ)
    env.pop(TABLES_ENV, None)
    # Fixed and distinct per server: the same tree gives the same
    # verdict every time, and a snippet's two runs see two hash orders.
    env["PYTHONHASHSEED"] = str(HASH_SEEDS[index % len(HASH_SEEDS)])
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(root), str(tmp)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=root,
            env=env,
        )
    try:
        proc.stdin.write((json.dumps(list(preload)) + "\n").encode())
        proc.stdin.flush()
    except OSError:
        pass  # it died at once; _collect reports it with its log
    os.set_blocking(proc.stdout.fileno(), False)
    server = _Server(index, jobs, proc, log, files)
    server.deadline = time.monotonic() + STARTUP_LIMIT
    return server


def _submit(server: _Server, timeout: float, concurrency: int) -> None:
    jobs = []
    for j, path in enumerate(server.jobs):
        stem = server.files / str(j)
        jobs.append(
            {
                "id": j,
                "token": f"{os.getpid()}-{server.index}-{j}-{time.time_ns()}",
                "path": str(path),
                "stdout": f"{stem}.out",
                "stderr": f"{stem}.err",
                "tables": f"{stem}.tables",
                "reads": f"{stem}.reads",
            }
        )
    batch = {"jobs": jobs, "concurrency": concurrency, "timeout": timeout}
    try:
        server.proc.stdin.write((json.dumps(batch) + "\n").encode())
        server.proc.stdin.flush()
    except OSError:
        pass  # the server died; _collect reports it with its log


def _collect(servers: list[_Server], timeout: float) -> None:
    selector = selectors.DefaultSelector()
    for server in servers:
        selector.register(server.proc.stdout, selectors.EVENT_READ, server)
    pending = set(range(len(servers)))
    while pending:
        now = time.monotonic()
        wait = min(servers[i].deadline for i in pending) - now
        for key, _ in selector.select(max(0.0, wait)):
            server = key.data
            chunk = _read(server)
            if chunk is None:  # EOF: the server is gone
                selector.unregister(server.proc.stdout)
                pending.discard(servers.index(server))
                continue
            server.buffer += chunk
            *lines, server.buffer = server.buffer.split(b"\n")
            for line in lines:
                _handle(server, json.loads(line), timeout)
            if server.done:
                selector.unregister(server.proc.stdout)
                pending.discard(servers.index(server))
        now = time.monotonic()
        for i in list(pending):
            if now > servers[i].deadline:
                selector.unregister(servers[i].proc.stdout)
                servers[i].proc.kill()
                pending.discard(i)
    selector.close()


def _read(server: _Server) -> bytes | None:
    try:
        chunk = os.read(server.proc.stdout.fileno(), 1 << 16)
    except BlockingIOError:
        return b""
    return chunk or None


def _handle(server: _Server, message: dict, timeout: float) -> None:
    server.deadline = time.monotonic() + timeout + SILENCE_SLACK
    if "ready" in message:
        server.ready = message
        if not message["ready"]:
            failure = "the snippet runner could not import torch:\n"
            failure += message.get("error", "")
            for j in range(len(server.jobs)):
                server.results[j] = Run(failure=failure)
            server.done = True
    elif message.get("done"):
        server.done = True
    elif "started" in message:
        server.started.add(message["started"])
    else:
        j = message["id"]
        stem = server.files / str(j)
        server.results[j] = Run(
            stdout=_text(f"{stem}.out"),
            stderr=_text(f"{stem}.err"),
            tables=_text(f"{stem}.tables"),
            reads=_reads(f"{stem}.reads"),
            exit=message["exit"],
            timed_out=message["timed_out"],
            seconds=message["seconds"],
        )


def _text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="backslashreplace")
    except FileNotFoundError:
        return ""


def _reads(path: str) -> list[str]:
    try:
        value = json.loads(_text(path) or "[]")
    except ValueError:
        return []
    return [p for p in value if isinstance(p, str)]


def _stop(server: _Server) -> None:
    """Tell the server to exit (EOF) without waiting for it to.

    Tearing down a process that holds torch takes a few tenths of a
    second; nobody needs to wait for that, so a daemon thread reaps it
    (or init does, if this process exits first).
    """
    proc = server.proc
    try:
        proc.stdin.close()
    except OSError:
        pass
    proc.stdout.close()
    if proc.poll() is None and not server.done:
        proc.kill()  # stopped responding, or we are unwinding
    threading.Thread(target=proc.wait, daemon=True).start()
