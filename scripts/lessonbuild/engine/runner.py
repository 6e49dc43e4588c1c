"""Run snippets in processes forked from preloaded servers (server.py).

A server pays for ``import torch`` once; every snippet still gets its
own process. A ``Pool`` holds one server per batch (a snippet's first
and second run): the imports overlap on two cores, and a snippet's two
runs come from different interpreters (hash seeds, addresses), a
sharper nondeterminism check for free. ``mkdocs serve`` keeps one pool
(an edited snippet runs at once); a build's second runs and homework go
on in the background (``Pool.start``) while the pages render.
"""

from __future__ import annotations

import atexit
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
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

SERVER = Path(__file__).with_name("server.py")
#: Temporary folders: snippet-engine-<pid of the engine>-<random>.
TMP_PREFIX = "snippet-engine-"
#: Seconds a server may take to import torch, or a batch's preload.
STARTUP_LIMIT = 300.0
#: The hash seed of each server (a forked child inherits its server's).
HASH_SEEDS = (0, 1)
#: Slack on top of the snippet timeout before a silent server is killed.
SILENCE_SLACK = 60.0
#: What ``Pool.background`` adds to a server's niceness.
BACKGROUND_NICE = 10


@dataclass(frozen=True)
class Limits:
    """What one run may use, each set by an environment variable
    (``ENV``): memory beyond what the server's imports mapped (torch maps
    far more than it touches), processes and threads, and the size of
    any file it writes, stdout included. server.py enforces them."""

    memory_mb: int = 4096
    processes: int = 256
    file_mb: int = 64

    ENV = {
        "memory_mb": "SNIPPET_MEMORY_MB",
        "processes": "SNIPPET_MAX_PROCESSES",
        "file_mb": "SNIPPET_MAX_FILE_MB",
    }

    @classmethod
    def from_env(cls) -> Limits:
        values = {}
        for name, var in cls.ENV.items():
            if (text := os.environ.get(var)) is None:
                continue
            try:
                values[name] = int(text)
                if values[name] <= 0:
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"{var}={text!r}: expected a whole number above 0"
                ) from None
        return cls(**values)

    def for_server(self) -> dict:
        return {
            "memory": self.memory_mb << 20,
            "processes": self.processes,
            "file_size": self.file_mb << 20,
        }

    def message(self, run: Run) -> str:
        """Which limit a failed run probably hit, and its setting; ""."""
        err = run.stderr
        memory = ("MemoryError", "can't allocate memory")
        threads = (
            "Resource temporarily unavailable",
            "can't start new thread",
        )
        if run.file_full or "File too large" in err:
            name = "file_mb"
            what = f"wrote a file (or its output) past {self.file_mb} MiB"
        elif run.memory_full or any(m in err for m in memory):
            name = "memory_mb"
            what = f"asked for more than {self.memory_mb} MiB of memory"
        elif any(t in err for t in threads):
            name = "processes"
            what = f"started more than {self.processes} processes or threads"
        else:
            return ""
        return f"it {what}, the limit ({self.ENV[name]})"


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
    outside: list[str] = field(default_factory=list)  # read, not ours
    uncached: str = ""  # why the result may not be cached (what it did)
    file_full: bool = False  # stdout or stderr reached the size limit
    memory_full: bool = False  # its processes together hit the memory limit
    server: int = 0  # the pid of the server that forked it
    limits: Limits | None = None


@dataclass(frozen=True)
class Module:
    """A job ``python -m NAME ARGS...``: the build's own code, forked to
    inherit the server's imports (the homework's kernel, notebooks.py)."""

    name: str
    args: tuple[str, ...] = ()


@dataclass(eq=False)  # hashed by identity (_collect)
class _Server:
    index: int
    proc: subprocess.Popen
    folder: Path  # its log and its batches' files
    # "<real path of the root>/": what its runs read is named relative
    # to it (server.py _record_reads).
    reads_prefix: str
    limits: Limits
    deadline: float
    files: Path | None = None  # this batch's job files
    jobs: list[Path | Module] = field(default_factory=list)
    buffer: bytes = b""
    ready: bool = False
    done: bool = False
    batches: int = 0
    preloaded: set[str] = field(default_factory=set)
    # Pool.start's jobs (or Pool.warm's empty batch), not collected yet.
    started_job: Started | None = None
    results: dict[int, Run] = field(default_factory=dict)
    started: set[int] = field(default_factory=set)

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = (self.folder / "server.log").read_text("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-lines:])


class Pool:
    """Fork servers, one per batch index (hash seed), kept between runs.

    A server starts when a batch first needs it (a check whose results
    are all cached starts none), and is replaced when it died, stopped
    mid-batch or ``key`` (the cache's base key) changed. Servers die with
    the thread that started them (PR_SET_PDEATHSIG): use a pool kept
    across ``mkdocs serve`` rebuilds from long-lived threads only.
    """

    def __init__(self, root: Path, limits: Limits | None = None):
        """``limits``: what each run may use (else ``Limits.from_env``)."""
        self.root = Path(root)
        self.limits = limits
        self.tmp: Path | None = None
        self.servers: dict[int, _Server] = {}
        self.key: str | None = None

    def run(
        self,
        batches: list[list[Path]],
        *,
        timeout: float,
        concurrency: int,
        threads: int | None = None,
        preload: list[str] | tuple[str, ...] = ("torch",),
        key: str | None = None,
    ) -> list[list[Run]]:
        """Run each batch on its server; one ``Run`` per path, in order,
        holding any failure (never raised). ``threads``: torch's per run
        (default: the cores shared by all runs at once); ``preload``:
        what the servers import first (preload.py)."""
        self._prepare(key)
        restore = _exit_on_sigterm()
        active: list[_Server] = []
        try:
            for i, jobs in enumerate(batches):
                if jobs:
                    active.append(self._server(i))
            if threads is None:
                cores = len(os.sched_getaffinity(0))
                threads = max(1, cores // (concurrency * max(1, len(active))))
            for server in active:
                jobs = batches[server.index]
                _submit(server, jobs, timeout, concurrency, preload, threads)
            _collect(active, timeout)
            out = [[Run() for _ in jobs] for jobs in batches]
            for server in active:
                out[server.index] = _runs(self.root, server)
            return out
        finally:
            for server in active:
                self._settle(server)
            restore()

    def warm(
        self,
        preload: list[str] | tuple[str, ...],
        key: str | None = None,
        count: int = len(HASH_SEEDS),
    ) -> None:
        """Start ``count`` servers importing ``preload`` now, without
        waiting (an empty batch the next ``run`` collects first)."""
        self._prepare(key)
        for i in range(count):
            server = self._server(i, wait=False)
            if server.started_job is None and set(preload) - server.preloaded:
                _submit(server, [], 0.0, 1, preload, 1)
                server.started_job = Started(self, server, 0.0)

    def background(self, index: int) -> None:
        """Lower the priority of server ``index`` (started) and what it
        forks: a build's seed-1 server, needed only at its end (an idle
        core still runs it at full speed)."""
        pid = self.servers[index].proc.pid
        with suppress(OSError):  # it has just died: the next run replaces it
            now = os.getpriority(os.PRIO_PROCESS, pid)
            os.setpriority(
                os.PRIO_PROCESS, pid, min(19, now + BACKGROUND_NICE)
            )

    def start(
        self,
        jobs: list[Path | Module],
        *,
        timeout: float,
        threads: int | None = None,
        preload: list[str] | tuple[str, ...] = ("torch",),
        key: str | None = None,
        index: int = 0,
    ) -> Started:
        """Run ``jobs`` on server ``index``, one at a time, without waiting
        (a build's second runs and homework while its pages render);
        ``Started.wait`` collects their Runs, and until then the server
        serves nothing else. ``threads``: torch's per run (its default)."""
        self._prepare(key)
        server = self._server(index)
        if threads is None:
            threads = len(os.sched_getaffinity(0))  # torch's default
        _submit(server, jobs, timeout, 1, preload, threads)
        server.started_job = Started(self, server, timeout)
        return server.started_job

    def _prepare(self, key: str | None) -> None:
        if key != self.key:  # what the servers preloaded may be stale
            self.close()
            self.key = key
        if self.tmp is None:
            _remove_stale_folders()
            self.tmp = Path(
                tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")
            )
            # Closed on exit even if its build never came.
            atexit.register(self.close)

    def _server(self, i: int, wait: bool = True) -> _Server:
        """Server ``i``, up and idle: started if missing or dead."""
        server = self.servers.get(i)
        if server is not None and server.started_job is not None and wait:
            server.started_job.wait()
            server = self.servers.get(i)
        if server is not None and server.proc.poll() is not None:
            self._settle(server)
            server = None
        if server is None:
            limits = self.limits or Limits.from_env()
            server = self.servers[i] = _start(self.root, i, self.tmp, limits)
        return server

    def _settle(self, server: _Server) -> None:
        """After a batch: keep the server, or stop it and forget it."""
        if server.files is not None:
            shutil.rmtree(server.files, ignore_errors=True)
        gone = server.proc.poll() is not None
        if gone or not server.done or not server.ready:
            _stop(server)  # died, stopped answering, or unwinding
            self.servers.pop(server.index, None)

    def close(self) -> None:
        """Stop every server (cancelling what ``start`` left running)
        and remove the temporary folder."""
        for server in list(self.servers.values()):
            if server.started_job is not None:
                server.started_job.cancel()  # stops and forgets it
            else:
                _stop(server)
        self.servers = {}
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
            atexit.unregister(self.close)


class Started:
    """Jobs ``Pool.start`` submitted: ``wait`` for their Runs, or
    ``cancel`` them."""

    def __init__(self, pool: Pool, server: _Server, timeout: float):
        self._pool, self._server, self._timeout = pool, server, timeout
        self._runs: list[Run] | None = None

    def wait(self) -> list[Run]:
        """One Run per job, in order, once all have finished."""
        if self._runs is None:
            if not self._server.ready:  # still importing: startup time
                self._server.deadline = time.monotonic() + STARTUP_LIMIT
            _collect([self._server], self._timeout)
            self._runs = _runs(self._pool.root, self._server)
            self._server.started_job = None
            self._pool._settle(self._server)
        return self._runs

    def cancel(self) -> None:
        """Stop the jobs now: their server is stopped, and with it the
        jobs and whatever they started."""
        if self._runs is None:
            self._runs = [Run(failure="cancelled") for _ in self._server.jobs]
            self._server.started_job = None
            self._server.done = False  # so _settle stops and forgets it
            self._pool._settle(self._server)


def _exit_on_sigterm():
    """SIGTERM unwinds (``finally`` stops the servers, removes the
    temporary folder); returns the undo. Main thread only (Python allows
    no handler elsewhere): there, and after SIGKILL, the next pool
    removes the folder (``_remove_stale_folders``)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, _frame):
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
    for folder in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*-*"):
        pid = folder.name[len(TMP_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def _runs(root: Path, server: _Server) -> list[Run]:
    """One Run per job of the server's batch, in order."""
    return [
        server.results.get(j) or _lost(root, server, j)
        for j in range(len(server.jobs))
    ]


def _lost(root: Path, server: _Server, j: int) -> Run:
    """The Run of a job the server never answered: the jobs it was
    running when it died are the cause, the others collateral."""
    if j in server.started:
        return Run(
            failure="the snippet runner died while this snippet ran "
            "(does it kill its parent process, os.getppid()?)\n"
            + server.log_tail()
        )
    culprits = [
        f"python -m {job.name}"
        if isinstance(job, Module)
        else job.relative_to(root).as_posix()
        for i, job in enumerate(server.jobs)
        if i in server.started and i not in server.results
    ]
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


#: What a fork server keeps of the build's environment, with the
#: ``LESSONBUILD_`` switches: a run could read the rest (a CI job's
#: tokens) in /proc/self/environ, which its new os.environ leaves.
SERVER_ENV = "PATH LANG LC_ALL PYTHONPATH PYTHONDONTWRITEBYTECODE".split()


def _start(root: Path, index: int, tmp: Path, limits: Limits) -> _Server:
    # A replaced server's folder may still be there: a fresh name.
    folder = Path(tempfile.mkdtemp(prefix=f"server{index}-", dir=tmp))
    # Fixed and distinct per server: the same tree gives the same verdict
    # every time, and a snippet's two runs see two hash orders.
    seed = str(HASH_SEEDS[index % len(HASH_SEEDS)])
    env = {
        k: v
        for k, v in os.environ.items()
        if k in SERVER_ENV or k.startswith("LESSONBUILD_")
    }
    env["PYTHONHASHSEED"] = seed
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(root), str(tmp)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=root,
            env=env,
        )
    os.set_blocking(proc.stdout.fileno(), False)
    return _Server(
        index,
        proc,
        folder,
        reads_prefix=os.path.join(os.path.realpath(root), ""),
        limits=limits,
        deadline=time.monotonic() + STARTUP_LIMIT,
    )


def _submit(server, jobs, timeout, concurrency, preload, threads) -> None:
    server.jobs = list(jobs)
    server.batches += 1
    server.files = server.folder / f"batch{server.batches}"
    server.files.mkdir()
    server.results, server.started, server.done = {}, set(), False
    server.preloaded |= set(preload)
    # Importing the batch's preload counts as starting up.
    server.deadline = time.monotonic() + STARTUP_LIMIT
    specs = []
    for j, job in enumerate(server.jobs):
        stem = server.files / str(j)  # the run's folder
        stem.mkdir()
        if isinstance(job, Module):
            what = {"module": job.name, "args": list(job.args)}
        else:
            what = {"path": str(job)}
        files = {name: f"{stem}/{name}" for name in ("tables", "reads")}
        out = {"stdout": f"{stem}/out", "stderr": f"{stem}/err"}
        specs.append({"id": j, **what, "dir": str(stem), **out, **files})
    batch = {
        "jobs": specs,
        "concurrency": concurrency,
        "timeout": timeout,
        "threads": threads,
        "preload": list(preload),
        "limits": server.limits.for_server(),
    }
    # OSError: the server died; _collect reports it with its log.
    with suppress(OSError):
        server.proc.stdin.write((json.dumps(batch) + "\n").encode())
        server.proc.stdin.flush()


def _collect(servers: list[_Server], timeout: float) -> None:
    """Read the servers' answers until each is done, gone or silent past
    its deadline (then killed)."""
    selector = selectors.DefaultSelector()
    for server in servers:
        selector.register(server.proc.stdout, selectors.EVENT_READ, server)
    pending = set(servers)
    while pending:
        wait = min(s.deadline for s in pending) - time.monotonic()
        for key, _ in selector.select(max(0.0, wait)):
            server = key.data
            try:
                chunk = os.read(server.proc.stdout.fileno(), 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                *lines, server.buffer = (server.buffer + chunk).split(b"\n")
                for line in lines:
                    _handle(server, json.loads(line), timeout)
            if not chunk or server.done:  # EOF: the server is gone
                selector.unregister(server.proc.stdout)
                pending.discard(server)
        for server in list(pending):
            if time.monotonic() > server.deadline:
                selector.unregister(server.proc.stdout)
                server.proc.kill()
                pending.discard(server)
    selector.close()


def _handle(server: _Server, message: dict, timeout: float) -> None:
    server.deadline = time.monotonic() + timeout + SILENCE_SLACK
    if "ready" in message:
        server.ready = message["ready"]
        # Next: the batch's preload, still part of starting up.
        server.deadline = time.monotonic() + STARTUP_LIMIT
        if not server.ready:
            failure = "the snippet runner could not start:\n"
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
        cap = server.limits.file_mb << 20
        reads, outside, uncached = _reads(
            stem / "reads", server.reads_prefix, server.jobs[j]
        )
        server.results[j] = Run(
            stdout=_text(stem / "out", cap),
            stderr=_text(stem / "err", cap),
            tables=_text(stem / "tables", cap),
            reads=reads,
            outside=outside,
            uncached=uncached,
            exit=message["exit"],
            timed_out=message["timed_out"],
            seconds=message["seconds"],
            file_full=any(_size(stem / n) >= cap for n in ("out", "err")),
            memory_full=message.get("memory_full", False),
            limits=server.limits,
            server=server.proc.pid,
        )


def _text(path: Path, cap: int = 1 << 30) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", errors="backslashreplace")
    except FileNotFoundError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _reads(path: Path, prefix: str, job: Path | Module):
    """(files under the root it opened, the snippet itself too; files
    outside it read; why it may not be cached, or ""), from its record
    (server.py ``_record_reads``)."""
    reads, outside, uncached = set(), set(), ""
    # The server keeps 1 MiB of it (MAX_READS there) and its last line.
    for line in _text(path, 2 << 20).splitlines():
        kind, _, value = line.partition(" ")
        if kind == "R":
            # The run can write this file: only a path inside the root
            # (never /dev/zero for the build to hash).
            if (
                value
                and not os.path.isabs(value)
                and ".." not in value.split("/")
            ):
                reads.add(value)
        elif kind == "O":
            outside.add(value)
        elif kind == "X":
            uncached = uncached or value
    if isinstance(job, Path):  # as the child sees it (server.py)
        own = os.path.abspath(job)
        if own.startswith(prefix):
            reads.add(own[len(prefix) :])
    return sorted(reads), sorted(outside), uncached


def _stop(server: _Server) -> None:
    """Tell the server to exit (EOF), remove its folder, and leave the
    reaping to a daemon thread: tearing torch down takes tenths of a s."""
    proc = server.proc
    with suppress(OSError):
        proc.stdin.close()
    proc.stdout.close()
    if proc.poll() is None and not server.done:
        proc.kill()  # stopped responding, or we are unwinding
    threading.Thread(target=proc.wait, daemon=True).start()
    shutil.rmtree(server.folder, ignore_errors=True)
