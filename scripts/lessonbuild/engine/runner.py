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
#: The nice value of a server whose work can wait (``Pool.background``).
BACKGROUND_NICE = 10


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
    jobs_root: Path  # its batches' files: in RAM where there is some
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
        yield the cores to the rest (nice ``BACKGROUND_NICE``): for the
        seed-1 server of a build, whose import and second runs are
        needed only at its end, while the first runs, the pages, the
        homework and the notebook conversion wait on no one else.
        Niceness is all that changes: a core nothing else wants still
        runs it at full speed, and every result is the same."""
        server = self.servers[index]
        try:
            os.setpriority(os.PRIO_PROCESS, server.proc.pid, BACKGROUND_NICE)
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
    for base in (Path(tempfile.gettempdir()), _ram()):
        if base is None:
            continue
        for folder in base.glob(f"{TMP_PREFIX}*-*"):
            pid = folder.name[len(TMP_PREFIX) :].split("-", 1)[0]
            if not pid.isdigit() or Path(f"/proc/{pid}").exists():
                continue
            shutil.rmtree(folder, ignore_errors=True)


#: A RAM-backed folder (tmpfs) for the files each run writes (its
#: stdout, stderr, tables, reads), where the platform has one: creating
#: a file on a disk's file system costs more (ext4 here: about 1 ms, in
#: its search for a free inode). Measured, with the reads file left out
#: of most runs (server.py): 256 synthetic snippets checked in 10.0-10.6
#: s instead of 11.0-12.3 s (system time 9.3-9.7 s instead of 11.8-13.4).
RAM = Path("/dev/shm")


def _ram() -> Path | None:
    """``RAM`` if this process may create folders there, else None."""
    if RAM.is_dir() and os.access(RAM, os.W_OK | os.X_OK):
        return RAM
    return None


def _jobs_root(folder: Path) -> Path:
    """Where a server's batches write their files: a folder of its own
    in RAM (``RAM``) where there is one, else ``folder``."""
    ram = _ram()
    if ram is None:
        return folder
    try:
        return Path(
            tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", dir=ram)
        )
    except OSError:
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
#: a fork copies and an exit frees a fraction of the page-table entries;
#: and, for a deck of at least ``MALLOC_FROM`` snippets, every Python
#: object from glibc's malloc (not Python's own arenas of 4 KiB pages).
#: Measured, a fork and exit of a server that imported torch: 26.6 ms ->
#: 13.4 ms with huge pages; then 11.8 ms -> 6.0 ms (system time per fork
#: and exit 14 ms -> 7 ms) with malloc. But malloc makes the server's
#: own import and preload slower, so it pays only for a server that
#: forks many runs. Cold checks, alternating, huge pages alone against
#: both: the lesson's 28 snippets 4.18 against 4.40 s (medians of 5);
#: 64 synthetic snippets 1.97 against 2.15 s; 256 synthetic snippets
#: 4.16 against 3.82 s (medians of 4), a crossover near 130. Without
#: THP, or with another libc, the tunable does nothing. The server puts
#: the environment back as it was (``RESTORE_ENV``), so a snippet sees
#: the environment it was run from.
FORK_ENV = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
MALLOC_ENV = {"PYTHONMALLOC": "malloc"}
#: Snippets under ``snippets/`` from which a server uses ``MALLOC_ENV``:
#: a cold check forks one run of each on each server.
MALLOC_FROM = 128
#: JSON {name: value before FORK_ENV, or null}, for the server.
RESTORE_ENV = "SNIPPET_ENGINE_RESTORE_ENV"


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
    allocator = dict(FORK_ENV)
    if _many_snippets(root):
        allocator.update(MALLOC_ENV)
    env[RESTORE_ENV] = json.dumps({k: env.get(k) for k in allocator})
    env.update(allocator)
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(root), str(tmp), str(jobs_root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log_file,
            cwd=root,
            env=env,
        )
    os.set_blocking(proc.stdout.fileno(), False)
    prefix = os.path.join(os.path.realpath(root), "")
    server = _Server(index, proc, log, folder, jobs_root, prefix)
    server.deadline = time.monotonic() + STARTUP_LIMIT
    return server


def _many_snippets(root: Path) -> bool:
    """Whether ``root/snippets`` holds ``MALLOC_FROM`` Python files or
    more (counted only that far)."""
    count = 0
    for _ in Path(root, "snippets").rglob("*.py"):
        count += 1
        if count >= MALLOC_FROM:
            return True
    return False


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
        stem = server.files / str(j)
        what = (
            {"module": path.name, "args": list(path.args)}
            if isinstance(path, Module)
            else {"path": str(path)}
        )
        jobs.append(
            {
                "id": j,
                "token": f"{os.getpid()}-{server.index}-{j}-{time.time_ns()}",
                **what,
                "stdout": f"{stem}.out",
                "stderr": f"{stem}.err",
                "tables": f"{stem}.tables",
                "reads": f"{stem}.reads",
            }
        )
    batch = {
        "jobs": jobs,
        "concurrency": concurrency,
        "timeout": timeout,
        "threads": threads,
        "preload": list(preload),
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
        server.results[j] = Run(
            stdout=_text(f"{stem}.out"),
            stderr=_text(f"{stem}.err"),
            tables=_text(f"{stem}.tables"),
            reads=_reads(f"{stem}.reads", server.reads_prefix, server.jobs[j]),
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


def _reads(path: str, prefix: str, job: Path | Module) -> list[str]:
    """The files under the root (``prefix``) the job opened: what its
    child listed, and the snippet itself, which the child leaves out (it
    opens it to run it, every time) to spare a file in most runs."""
    try:
        value = json.loads(_text(path) or "[]")
    except ValueError:
        value = []
    reads = {p for p in value if isinstance(p, str)}
    if isinstance(job, Path):  # as the child sees it (server.py)
        own = os.path.abspath(job)
        if own.startswith(prefix):
            reads.add(own[len(prefix) :])
    return sorted(reads)


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
