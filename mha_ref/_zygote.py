"""One interpreter that has imported torch, forked for each student's file.

Why: a grading child is a fresh ``python -I`` that imports torch, 2-3 s
of CPU before the student's file is read, and ``check()`` in a notebook,
or a test suite, starts one per call. The zygote pays that once per
grader process; each child is then a fork (tens of ms) that runs exactly
what a fresh child runs: :func:`mha_ref._isolate.isolate`, then
:func:`mha_ref._sandbox.main`. It never runs a student's code itself.

What keeps it out of reach: like the grader, it is not dumpable (no
process of its user may trace it, or open its memory or descriptors
through ``/proc``), and a child closes the zygote's socket before the
file is read; the file then runs in namespaces where the zygote has no
process number to signal.

Protocol, one JSON message per packet on a ``SOCK_SEQPACKET`` pair: the
grader sends ``{"path", "timeout", "env"}`` with three descriptors (requests,
replies, output); the zygote answers ``{"pid"}``, and ``{"exit": pid,
"status"}`` when that child ends. It exits when the grader's end closes
(the grader ended, however it did), and its children with it: each is
killed when its parent ends (:func:`mha_ref._isolate.isolate`).

Linux only (fork, namespaces); elsewhere, and if the zygote cannot
start, the grader starts a fresh child per file as before.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from pathlib import Path

#: What the student's process keeps of the grader's environment: what
#: Python, torch and its libraries read. An autograder's tokens and the
#: rest are not the student's to print (PYTHONPATH: mha_ref's own root
#: is put first on the path).
_KEPT_ENV = re.compile(
    r"(PATH|HOME|USER|LOGNAME|LANG|LANGUAGE|TZ|TMPDIR|TERM|VIRTUAL_ENV"
    r"|(LC|OMP|MKL|KMP|OPENBLAS|TORCH|CUDA|NVIDIA|LD|DYLD|CONDA)_\w*"
    r"|PYTHON(?!PATH$)\w*)"
)
#: The zygote started as the grader's command line began (start_early).
_EARLY: dict = {}


def child_env(env) -> dict[str, str]:
    """The environment of the zygote and of each child (one torch
    thread unless the grader's own says otherwise)."""
    kept = {k: v for k, v in env.items() if _KEPT_ENV.fullmatch(k)}
    kept.setdefault("OMP_NUM_THREADS", "1")
    return kept


def start_early(root: str) -> None:
    """Start the zygote for ``root`` now (``python -m mha_ref.grade``,
    before the grader imports torch): :func:`take_early` hands it over."""
    try:
        zygote = Zygote(Path(root).resolve(), child_env(os.environ))
    except OSError:
        return  # the grader starts one when it needs it, or goes without
    _EARLY.update(zygote=zygote, key=(str(Path(root).resolve()), os.getpid()))
    atexit.register(_drop_early)


def _drop_early() -> None:
    """Kill a zygote :func:`start_early` started that nothing took
    (``--help``, no such file, an error before grading): it would import
    torch for nothing, in a session of its own (no Ctrl-C reaches it)."""
    if _EARLY:
        _EARLY["zygote"].process.kill()
        _EARLY.pop("zygote").close()


def take_early(root: str) -> Zygote | None:
    """The zygote :func:`start_early` started for ``root`` in this
    process, once; None if there is none."""
    if _EARLY.get("key") != (root, os.getpid()):
        return None
    zygote = _EARLY["zygote"]
    _EARLY.clear()
    return zygote


#: mha_ref by its path, not by putting its folder on the path: that
#: folder is often the submission's, and torch's own imports (numpy,
#: typing_extensions) found a file planted there and ran it in the
#: zygote, outside every sandbox (an attacker's review: it printed 7 of 7
#: for an empty class). Its children are sandboxed before they read the
#: file's folder (``_sandbox`` puts it on their path).
_BOOT = (
    "import sys, importlib.util as u; "
    "p = sys.argv[1] + '/mha_ref'; "
    "s = u.spec_from_file_location('mha_ref', p + '/__init__.py', "
    "submodule_search_locations=[p]); "
    "m = sys.modules['mha_ref'] = u.module_from_spec(s); "
    "s.loader.exec_module(m); "
    "from mha_ref._zygote import serve; serve(int(sys.argv[2]))"
)


class Zygote:
    """The grader's end: start children, learn their ends."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock, theirs = pair
        fd = theirs.fileno()
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", _BOOT, str(root), str(fd)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(fd,),
            env=env,
            start_new_session=True,
        )  # fmt: skip
        theirs.close()
        self.ended: dict[int, int] = {}  # pid -> exit status
        self.alive = True

    def spawn(self, path: Path, timeout: float, env, fds, wait: float):
        """Fork a child for ``path`` with ``env`` and ``fds`` (requests,
        replies, output); its pid. OSError if the zygote is gone or did
        not answer within ``wait`` seconds (it imports torch first)."""
        job = {"path": str(path), "timeout": timeout, "env": env}
        job = json.dumps(job).encode()
        try:
            socket.send_fds(self._sock, [job], list(fds))
        except OSError:
            self.close()
            raise
        deadline = time.monotonic() + wait
        while True:
            message = self._next(deadline - time.monotonic())
            if "pid" in message:  # a reused pid: not an ended one
                self.ended.pop(message["pid"], None)
                return message["pid"]

    def status(self, pid: int, wait: float | None = 0) -> int | None:
        """Child ``pid``'s exit status, once it ended; None if it has not
        within ``wait`` seconds (None: as long as it takes). A zygote
        that is gone took its children with it: -9."""
        deadline = None if wait is None else time.monotonic() + wait
        while pid not in self.ended:
            left = None if deadline is None else deadline - time.monotonic()
            try:
                self._next(left)
            except TimeoutError:
                return None
            except OSError:
                return self.ended.setdefault(pid, -9)
        return self.ended[pid]

    def _next(self, left: float | None) -> dict:
        """The zygote's next message (recording ends); TimeoutError, or
        OSError when it is gone."""
        if not self.alive:
            raise OSError("the zygote has ended")
        limit = None if left is None else max(left, 0)
        ready, _, _ = select.select([self._sock], [], [], limit)
        if not ready:
            raise TimeoutError
        data = self._sock.recv(4096)
        if not data:
            self.close()
            raise OSError("the zygote has ended")
        message = json.loads(data)
        if "exit" in message:
            self.ended[message["exit"]] = message["status"]
        return message

    def close(self) -> None:
        """End the zygote (its children are the grader's to end)."""
        if self.alive:
            self.alive = False
            self._sock.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Forked:
    """A zygote's child, as grade.Child uses a ``Popen``."""

    def __init__(self, zygote: Zygote, pid: int, output: int) -> None:
        self.zygote, self.pid = zygote, pid
        self.stdout = open(output, "rb")  # noqa: SIM115 - the relay's
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.zygote.status(self.pid)
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self.zygote.status(self.pid, wait=None)
        return self.returncode


# --- the zygote's side -------------------------------------------------------


def serve(fd: int) -> None:
    """Not dumpable for its whole life (as the grader while it grades),
    import what every child needs, then fork one per request."""
    from ._isolate import undumpable

    with undumpable():  # it ends by os._exit, never dumpable again
        _serve(fd)


def _serve(fd: int) -> None:
    import gc

    import torch

    from . import _sandbox  # noqa: F401 - what a child runs

    torch.set_num_threads(1)  # no thread pool to fork with
    _warm_meta(torch)
    gc.freeze()  # a child's collections never walk (and copy) torch
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            _report_ends(sock)
        if sock in ready:
            data, fds, _, _ = socket.recv_fds(sock, 4096, 3)
            if not data:  # the grader has gone, or is done
                os._exit(0)
            job = json.loads(data)
            zygote = os.getpid()
            pid = os.fork()
            if pid == 0:
                sock.close()
                for own in (wake_r, wake_w):
                    os.close(own)
                _child(job, fds, zygote)  # never returns
            for passed in fds:
                os.close(passed)
            sock.send(json.dumps({"pid": pid}).encode())


def _warm_meta(torch) -> None:
    """The first operation on the ``meta`` device imports torch's Python
    meta kernels and, through them, ``torch._dynamo``: 2.2 s of CPU in
    every child that reached the causal milestone's check on another
    device (``grade._on_another_device``). Done here, before any fork,
    each child starts with them. Measured (one correct file, 3 runs
    each): warming after the first fork, as before, left the first child
    paying it while the zygote paid it too, 3.9 s and 4.6 CPU-s a grade;
    warming first, 3.1 s and 3.1 CPU-s; a file that fails at load waits
    0.2 s longer (2.7 -> 2.9 s)."""
    torch.ones(1, device="meta") + 1


def _report_ends(sock) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        code = os.waitstatus_to_exitcode(status)
        sock.send(json.dumps({"exit": pid, "status": code}).encode())


def _child(job: dict, fds: list[int], zygote: int) -> None:
    """What ``python -I -c BOOT`` did in a fresh child, from the fork:
    its own session, the output pipe for stdout and stderr, the file's
    folder, then isolate and run, killed if the zygote ends (it ends
    when the grader does, its socket closed)."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        requests, replies, output = fds
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        for fd in (null, output):
            os.close(fd)
        path = Path(job["path"])
        os.chdir(path.parent)
        os.environ.clear()  # the grader's now, not the zygote's
        os.environ.update(job["env"])
        from ._isolate import isolate
        from ._sandbox import main

        isolate(zygote)
        args = [str(path), str(job["timeout"]), str(requests), str(replies)]
        sys.argv[2:] = args  # ["-c", root, *args], as a fresh child's
        main(args)
        code = 0
    except SystemExit as done:  # as the interpreter ends on it
        code = 0 if done.code is None else done.code
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
