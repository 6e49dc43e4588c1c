"""Run snippets in processes forked from preloaded servers (server.py).

A server pays for the interpreter and ``import torch`` once; every snippet
still gets its own process. A ``Pool`` holds one server per batch (a
snippet's first and second run), started all at once, so the two imports
overlap on two cores and the two runs of a snippet come from different
interpreters (different hash seeds and addresses), which makes the
nondeterminism check sharper at no extra wall-clock cost.

``run_batches`` starts a pool and stops it when done (the CLI); the
lesson plugin keeps one pool for a whole ``mkdocs serve``, so an edited
snippet runs at once in a fork of a server that is already up, and one
for a build, whose second runs and homework notebook go on in the
background (``Pool.start``) while the pages render.
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
from dataclasses import dataclass, field
from pathlib import Path

SERVER = Path(__file__).with_name("server.py")
#: Temporary folders: snippet-engine-<pid of the engine>-<random>.
TMP_PREFIX = "snippet-engine-"
TABLES_ENV = "MHA_REF_TABLES_FILE"
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
    """What one run may use (server.py enforces them with setrlimit).

    Each has a setting, an environment variable read by ``from_env``:
    ``SNIPPET_MEMORY_MB`` (address space beyond what the server's imports
    mapped: torch alone maps far more than it touches, so the limit is
    counted from there), ``SNIPPET_MAX_PROCESSES`` (processes and
    threads, counted in the run's own user namespace) and
    ``SNIPPET_MAX_FILE_MB`` (any one file it writes, its stdout and
    stderr included: a run printing without end stops at this size
    instead of filling the disk and the build's memory).
    """

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
            text = os.environ.get(var)
            if text is None:
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
        if run.file_full or "File too large" in err:
            return (
                f"it wrote a file (or its output) past {self.file_mb} MiB, "
                f"the limit ({self.ENV['file_mb']})"
            )
        if "MemoryError" in err or "can't allocate memory" in err:
            return (
                f"it asked for more than {self.memory_mb} MiB of memory, "
                f"the limit ({self.ENV['memory_mb']})"
            )
        if (
            "Resource temporarily unavailable" in err
            or "can't start new thread" in err
        ):
            return (
                f"it started more than {self.processes} processes or "
                f"threads, the limit ({self.ENV['processes']})"
            )
        return ""


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
    server: int = 0  # the pid of the server that forked it
    limits: Limits | None = None


@dataclass(frozen=True)
class Module:
    """A job that is ``python -m NAME ARGS...`` instead of a snippet file:
    the build's own code, run in a fork to inherit the server's imports
    (the homework notebook's kernel, notebooks.py)."""

    name: str
    args: tuple[str, ...] = ()


@dataclass
class _Server:
    index: int
    proc: subprocess.Popen
    log: Path
    folder: Path
    jobs_root: Path  # its batches' files
    # "<real path of the root>/": its children name what they read
    # relative to it (server.py _record_reads), and so does _reads.
    reads_prefix: str
    files: Path | None = None  # this batch's job files
    jobs: list[Path | Module] = field(default_factory=list)
    buffer: bytes = b""
    ready: bool = False
    done: bool = False
    deadline: float = 0.0
    batches: int = 0
    preloaded: set[str] = field(default_factory=set)
    limits: Limits = field(default_factory=Limits)
    warming: bool = False  # a warm-up batch whose answer is unread
    started_job: Started | None = None  # Pool.start's jobs, uncollected
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
    pool = Pool(root)
    try:
        return pool.run(
            batches, timeout=timeout, concurrency=concurrency, preload=preload
        )
    finally:
        pool.close()


class Pool:
    """Fork servers, one per batch index (hash seed), kept between runs.

    A server is started when a batch first needs it, so a check whose
    every result is cached starts none. ``key`` names what the servers
    preloaded from the repository (the cache's base key: mha_ref, the
    runner): when it changes, the servers are replaced, as is a server
    that died or was stopped mid-batch. Servers started from a thread
    die with that thread (PR_SET_PDEATHSIG), so a pool kept across
    ``mkdocs serve`` rebuilds is used from its long-lived threads only.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
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
        preload: list[str] | tuple[str, ...] = (),
        key: str | None = None,
    ) -> list[list[Run]]:
        """Run each batch on its server; one ``Run`` per path, in order.

        ``threads``: torch's threads per run; by default the cores shared
        by every run going on at once."""
        self._prepare(key)
        restore = _exit_on_sigterm()
        active: list[_Server] = []
        try:
            for i, jobs in enumerate(batches):
                if jobs:
                    server = self._server(i, timeout)
                    server.jobs = list(jobs)
                    active.append(server)
            if threads is None:  # the cores, shared by every run at once
                cores = len(os.sched_getaffinity(0))
                threads = max(1, cores // (concurrency * max(1, len(active))))
            for server in active:
                _submit(server, timeout, concurrency, preload, threads)
            _collect(active, timeout)
            out = [[Run() for _ in jobs] for jobs in batches]
            for server in active:
                for j in range(len(server.jobs)):
                    out[server.index][j] = server.results.get(j) or _lost(
                        self.root, server, j
                    )
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
        """Start ``count`` servers and their preload now, without waiting.

        For ``mkdocs serve``: the servers import while the site builds
        and the author edits, so the next run finds them ready. A warm-up
        is an empty batch; the next ``run`` reads its answer first.
        """
        self._prepare(key)
        for i in range(count):
            server = self._server(i, 0.0, wait=False)
            if server.warming or set(preload) <= server.preloaded:
                continue
            server.jobs = []
            _submit(server, 0.0, 1, preload, 1)
            server.warming = True

    def background(self, index: int) -> None:
        """Let server ``index`` (started) and what it forks from now on
        yield the cores to the rest (``BACKGROUND_NICE`` added to its
        niceness, so a build run under ``nice`` keeps the order): for the
        seed-1 server of a build, whose import and second runs are
        needed only at its end, while the first runs, the pages, the
        homework and the notebook conversion wait on no one else.
        Niceness is all that changes: a core nothing else wants still
        runs it at full speed, and every result is the same."""
        server = self.servers[index]
        try:
            pid = server.proc.pid
            now = os.getpriority(os.PRIO_PROCESS, pid)
            os.setpriority(
                os.PRIO_PROCESS, pid, min(19, now + BACKGROUND_NICE)
            )
        except OSError:
            pass  # it has just died: the next run replaces it

    def start(
        self,
        jobs: list[Path | Module],
        *,
        timeout: float,
        concurrency: int = 1,
        threads: int | None = None,
        preload: list[str] | tuple[str, ...] = (),
        key: str | None = None,
        index: int = 0,
    ) -> Started:
        """Run ``jobs`` on server ``index`` without waiting for them.

        For what a build can do while its pages render: the second run
        of each snippet (check.py) and the homework notebook, each in
        forks of a server that already imported torch; ``Started.wait``
        collects their Runs. Until then the server serves nothing else
        (a ``run`` or ``start`` that needs it waits for them first).
        ``threads``: torch's threads per run (default: torch's own).
        """
        self._prepare(key)
        server = self._server(index, timeout)
        server.jobs = list(jobs)
        if threads is None:
            threads = len(os.sched_getaffinity(0))  # torch's default
        _submit(server, timeout, concurrency, preload, threads)
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
            # A pool whose build never came (MkDocs stopped at another
            # plugin's settings) is closed on the way out all the same.
            atexit.register(self.close)

    def _server(self, i: int, timeout: float, wait: bool = True) -> _Server:
        """Server ``i``, up and idle: started if missing or dead."""
        server = self.servers.get(i)
        if server is not None and server.started_job is not None and wait:
            server.started_job.wait()
            server = self.servers.get(i)
        if server is not None and server.warming and wait:
            server.jobs = []
            # Still importing, maybe: that is startup time.
            server.deadline = time.monotonic() + STARTUP_LIMIT
            _collect([server], timeout)
            server.warming = False
            self._settle(server)
            server = self.servers.get(i)
        if server is not None and server.proc.poll() is not None:
            self._settle(server)
            server = None
        if server is None:
            server = _start(self.root, i, self.tmp)
            self.servers[i] = server
        return server

    def _settle(self, server: _Server) -> None:
        """After a batch: keep the server, or stop it and forget it."""
        if server.files is not None:
            shutil.rmtree(server.files, ignore_errors=True)
        gone = server.proc.poll() is not None
        if gone or not server.done or not server.ready:
            _stop(server)  # died, stopped answering, or unwinding
            _remove(server)
            self.servers.pop(server.index, None)

    def close(self) -> None:
        """Stop every server (cancelling what ``start`` left running)
        and remove the temporary folder."""
        for server in list(self.servers.values()):
            if server.started_job is not None:
                server.started_job.cancel()
        for server in self.servers.values():
            _stop(server)
            _remove(server)
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
        """One Run per job, in order, once all have finished (each
        bounded by the timeout)."""
        if self._runs is None:
            server = self._server
            _collect([server], self._timeout)
            self._runs = [
                server.results.get(j) or _lost(self._pool.root, server, j)
                for j in range(len(server.jobs))
            ]
            server.started_job = None
            self._pool._settle(server)
        return self._runs

    def cancel(self) -> None:
        """Stop the jobs now: their server is stopped, and with it the
        jobs and whatever they started (they die with their parent)."""
        if self._runs is None:
            server = self._server
            self._runs = [Run(failure="cancelled") for _ in server.jobs]
            server.started_job = None
            server.done = False  # so _settle stops and forgets it
            self._pool._settle(server)


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
    for base in (Path(tempfile.gettempdir()),):
        for folder in base.glob(f"{TMP_PREFIX}*-*"):
            pid = folder.name[len(TMP_PREFIX) :].split("-", 1)[0]
            if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            shutil.rmtree(folder, ignore_errors=True)


def _jobs_root(folder: Path) -> Path:
    """Where a server's batches write their files (outside the root,
    the one place a run may write besides its scratch, server.py)."""
    return folder


def _remove(server: _Server) -> None:
    """Remove a stopped server's folders (its log, its batches' files)."""
    shutil.rmtree(server.folder, ignore_errors=True)
    shutil.rmtree(server.jobs_root, ignore_errors=True)


def _lost(root: Path, server: _Server, j: int) -> Run:
    """The Run of a job the server never answered: who is to blame.

    A server dies with the snippets it was running (one that kills its
    parent, a crash); those are named as the cause, the jobs it had not
    started yet are named as collateral.
    """
    culprits = [
        _label(root, server.jobs[i])
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


def _label(root: Path, job: Path | Module) -> str:
    if isinstance(job, Module):
        return f"python -m {job.name}"
    return job.relative_to(root).as_posix()


#: How a server allocates, for cheaper forks: glibc's heap on
#: transparent huge pages (where the kernel offers them on request), so
#: a fork copies and an exit frees a fraction of the page-table entries.
#: Measured, a fork and exit of a server that imported torch: 26.6 ms ->
#: 13.4 ms. Without THP, or with another libc, the tunable does nothing.
#: A run never sees it: its environment is server.run_environment.
FORK_ENV = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def _start(root, index, tmp) -> _Server:
    # A replaced server's folder may still be there: a fresh name.
    folder = Path(tempfile.mkdtemp(prefix=f"server{index}-", dir=tmp))
    jobs_root = _jobs_root(folder)
    log = folder / "server.log"
    env = dict(os.environ)
    env.pop(TABLES_ENV, None)
    # Fixed and distinct per server: the same tree gives the same
    # verdict every time, and a snippet's two runs see two hash orders.
    env["PYTHONHASHSEED"] = str(HASH_SEEDS[index % len(HASH_SEEDS)])
    env.update(FORK_ENV)
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(root), str(tmp)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=root,
            env=env,
        )
    os.set_blocking(proc.stdout.fileno(), False)
    prefix = os.path.join(os.path.realpath(root), "")
    server = _Server(index, proc, log, folder, jobs_root, prefix)
    server.limits = Limits.from_env()
    server.deadline = time.monotonic() + STARTUP_LIMIT
    return server


def _submit(server, timeout, concurrency, preload, threads) -> None:
    server.batches += 1
    server.files = server.jobs_root / f"batch{server.batches}"
    server.files.mkdir()
    server.results, server.started, server.done = {}, set(), False
    server.preloaded |= set(preload)
    # Importing the batch's preload counts as starting up.
    server.deadline = time.monotonic() + STARTUP_LIMIT
    jobs = []
    for j, path in enumerate(server.jobs):
        stem = server.files / str(j)  # the run's folder
        stem.mkdir()
        what = (
            {"module": path.name, "args": list(path.args)}
            if isinstance(path, Module)
            else {"path": str(path)}
        )
        jobs.append(
            {
                "id": j,
                **what,
                "dir": str(stem),
                "stdout": f"{stem}/out",
                "stderr": f"{stem}/err",
                "tables": f"{stem}/tables",
                "reads": f"{stem}/reads",
            }
        )
    batch = {
        "jobs": jobs,
        "concurrency": concurrency,
        "timeout": timeout,
        "threads": threads,
        "preload": list(preload),
        "limits": server.limits.for_server(),
    }
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
        server.ready = message["ready"]
        # Next: the batch's preload, still part of starting up.
        server.deadline = time.monotonic() + STARTUP_LIMIT
        if not server.ready:
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
        cap = server.limits.file_mb << 20
        reads, outside, uncached = _reads(
            f"{stem}/reads", server.reads_prefix, server.jobs[j]
        )
        out, err = _text(f"{stem}/out", cap), _text(f"{stem}/err", cap)
        server.results[j] = Run(
            stdout=out,
            stderr=err,
            tables=_text(f"{stem}/tables", cap),
            reads=reads,
            outside=outside,
            uncached=uncached,
            exit=message["exit"],
            timed_out=message["timed_out"],
            seconds=message["seconds"],
            file_full=any(_size(f"{stem}/{n}") >= cap for n in ("out", "err")),
            limits=server.limits,
            server=server.proc.pid,
        )


def _text(path: str, cap: int = 1 << 30) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", errors="backslashreplace")
    except FileNotFoundError:
        return ""


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _reads(
    path: str, prefix: str, job: Path | Module
) -> tuple[list[str], list[str], str]:
    """What the job's audit hook noted (server.py ``_record_reads``):
    the files under the root (``prefix``) it opened, with the snippet
    itself, which the child leaves out; the files outside the root it
    read; why it may not be cached ("" if it may)."""
    reads, outside, uncached = set(), set(), ""
    for line in _text(path).splitlines():
        kind, _, value = line.partition(" ")
        if kind == "R":
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
