"""Grade a student's ``MultiHeadAttention``, one line per milestone.

Usage::

    python -m mha_ref.grade path/to/my_mha.py

Grading a file someone else wrote, run this from outside its folder, or
as ``python -P -m mha_ref.grade``: ``python -m`` imports ``mha_ref``
from the current folder first, and a submission's folder holds an
``mha_ref`` of its own (the project unzips it there), which may not be
this one (a folder's own ``mha_ref/grade.py`` printed 7 forged PASS
lines: an attacker's audit).

The file must define ``MultiHeadAttention(d_model, num_heads)`` with four
bias-free ``nn.Linear`` layers ``W_Q, W_K, W_V, W_O`` and
``forward(query, key, value, mask=None, is_causal=False)`` returning
``(output (B, T_q, d_model), weights (B, h, T_q, T_k))``, the interface
of the project slides. Masks follow ``mha_ref``: ``True`` = may attend;
``is_causal=True`` lets query ``i`` see keys ``0..i`` (top-left, also
when ``T_q != T_k``) and combines with ``mask`` (both must allow a key).

Why each milestone exists: shapes and parameter counts cannot see the
lesson's silent traps (a wrong head split keeps every shape), and at
``h = 1`` most wrong splits *are* the right one. So values are compared
at ``h > 1`` against ``torch.nn.MultiheadAttention`` holding the same
weights, an implementation that shares no code with the student's, run
in float64 (so that the tolerance meets the student's rounding alone);
backward passes in train mode (no mask, a padding mask, ``is_causal``)
are compared with its gradients, of the weights and of the inputs. When
values differ, the grader recomputes the reference with each known bug
and names the one that reproduces the student's numbers; a mask, causal
or cross-attention hint is given only once the same call without it is
right.

Why it cannot be fooled: the student's file runs in a child process
(:mod:`mha_ref._sandbox`, in a fork of a ``python -I`` interpreter that
has imported torch and nothing of the student's, :mod:`mha_ref._zygote`,
or in a fresh one where it cannot fork), which only executes requests
and sends back tensors. Inputs and weights are drawn at random per run
here, every verdict is computed here, and this process prints the lines
and chooses the exit status. What the student's code prints goes to
stderr; an early exit, a hang or a crash of the child is a FAIL. On
Linux the child also cannot reach this process (:mod:`mha_ref._isolate`:
no writing into its output, no ptrace, no signal). And the grade is of
the student's code: a milestone whose calls run a function of
``mha_ref`` (imported, subclassed or delegated to), or PyTorch's own
multi-head attention (the layer it compares against), fails, naming it.
That check runs in the student's process, so it catches a file that
uses the reference, not one written to hide that it does (no check
could tell a hand-copied reference from the student's own). Each
request's time limit is kept here as well as by the child's watchdog,
and the child gets only the environment Python and torch read.

What the file prints, and the messages of the errors it raises, are in
the grader's output: the file can read what the grading user can (it is
walled off from writing, the network and other processes, not from
reading). Grading files of several people, grade each as a user, or in
a container, that can read that one submission alone.

A broken module never crashes the grader: a syntax error, an exception
or a forward that never returns is reported with the student's file and
line. The exit status is 0 only if every milestone passes.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # Run as `python -m mha_ref.grade` in the folder of a submission,
    # whose files may be named like a module imported below (secrets.py,
    # argparse.py, torch.py: a secrets.py forged 7 of 7 from this
    # process, outside every sandbox): that folder leaves the path before
    # this module imports anything (mha_ref's __init__ imports nothing);
    # this package's own modules come from its __path__. Not before
    # Python's own start-up: `-m` imports a few standard modules
    # (importlib's, functools, __future__ for the line above) from that
    # folder first, which no code here can stop: a submission is graded
    # from outside its folder, or with python -P (the usage says so).
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    # The zygote imports torch in an interpreter of its own: started now
    # (its module needs only the standard library), that import runs
    # beside this process's own, below, instead of after it (a grading
    # on two cores: 5.1 -> 3.5 s).
    if sys.platform.startswith("linux"):
        from mha_ref import _zygote

        _zygote.start_early(os.path.join(os.path.dirname(__file__), ".."))

import argparse
import atexit
import contextlib
import io
import math
import re
import secrets
import select
import signal
import subprocess
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from ._isolate import undumpable
from ._sandbox import ARGUMENTS, PROJECTIONS, encode, said
from ._zygote import child_env
from .mha import merge_heads, split_heads
from .traps import split_heads_direct_view, split_heads_transpose_first

SIGNATURE = "forward(query, key, value, mask=None, is_causal=False)"
#: What a class with no forward is told (nn.Module's own is there).
NO_FORWARD = (
    f"the class in your file has no forward; define {SIGNATURE} in it (in "
    f"the project notebook, a %%writefile cell writes the file whole: after "
    f"changing an earlier cell, run the cells again from milestone 1 down)"
)
TIMEOUT_S = 20.0  # per request; a correct module needs well under 1 s
#: Extra seconds the child gets to start (it imports torch) on a busy
#: machine, beyond the student's import time limit.
STARTUP_S = 120.0
#: The whole grading's limit, in per-request limits, counted from the
#: first import's end: about 114 requests each just under the limit took
#: 35 minutes (an expert's audit); a correct module needs about a second.
TOTAL_TIMEOUTS = 15
ATOL = 1e-5  # float32: slides/49-milestone-3-h-1-equivalence.html
D_MODEL = 8  # the value checks' width
#: Bytes: the biggest reply the child writes is a few tens of KB (four
#: 32x32 gradients); a bigger one is not the grader's (32 MB of empty
#: lists took 41 s and 2.85 GB to load).
MAX_REPLY = 1 << 20
#: What a reply may hold once loaded, counted as it is walked (a list
#: met twice counts twice): a forged 1.4 KB reply of nested lists that
#: share their levels was formatted into a 322 MB message here (1.2 GB
#: of this process's memory; one more level is ten times that).
REPLY_ITEMS, REPLY_CHARS, REPLY_DEPTH = 20_000, 1 << 20, 8
#: Of what the student's code prints: what is shown, and what is kept.
SHOWN, KEPT = 1 << 20, 1 << 20
#: What runs while the grader imports the file: its top level.
IMPORTING = "the import of your file"


def _bounded(reply: dict) -> bool:
    """Does the reply hold only what the child sends (dicts with str
    keys, lists, str, numbers, None, tensors) within :data:`REPLY_ITEMS`
    items, :data:`REPLY_CHARS` characters and :data:`REPLY_DEPTH` levels,
    so that formatting any part of it stays small? And tensors no bigger
    than :data:`MAX_REPLY` bytes laid out: one element expanded to
    (2^17, 2^17) is 2 KB on the wire, and comparing it took the grader
    225 s outside every time limit (an attacker's reply)."""
    items = chars = laid_out = 0
    stack = [(reply, 0)]
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > REPLY_ITEMS or depth > REPLY_DEPTH:
            return False
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            chars += sum(map(len, item))
            stack += ((v, depth + 1) for v in item.values())
        elif isinstance(item, (list, tuple)):
            stack += ((v, depth + 1) for v in item)
        elif isinstance(item, torch.Tensor):
            laid_out += item.numel() * item.element_size()
        elif item is not None and not isinstance(item, (int, float)):
            return False
        if chars > REPLY_CHARS or laid_out > MAX_REPLY:
            return False
    return True


def _laid_flat(data: bytes) -> bool:
    """Is ``data`` a zip as ``torch.save`` writes it: every entry stored
    as it is, each at a place of its own, all together no bigger than
    ``data``? ``torch.load`` inflates each entry it is pointed at: a
    forged reply of 133 KB whose 16 entries named one deflated block of
    128 MB of zeros took this process to 2.27 GB and 75 s, outside every
    time limit (an attacker's audit; the 1 MB a reply may be holds ten
    thousand such entries)."""
    try:
        entries = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError):
        return False
    return (
        len({e.header_offset for e in entries}) == len(entries)
        and all(
            e.compress_type == zipfile.ZIP_STORED
            and e.compress_size == e.file_size
            for e in entries
        )
        and sum(e.file_size for e in entries) <= len(data)
    )


class Failed(Exception):
    """A milestone's verdict: what differed, and the likely cause."""


def _names(listed) -> list[str]:
    """The names a reply lists (arguments, weights, attributes), at most
    four; "?" for anything but a list of strings (the reply is the
    child's: a forged one is data, never code)."""
    if not isinstance(listed, (list, tuple)) or not all(
        isinstance(name, str) for name in listed
    ):
        return ["?"]
    return [name[:80] for name in listed[:4]]


class StudentError(Exception):
    """The student's code raised (or the child ended) during a request."""

    def __init__(self, message: str, kinds=(), where: str = "", said=""):
        super().__init__(message)
        #: What the exception said ("ValueError: ..."), as the child sent it.
        self.said = said if isinstance(said, str) else ""
        # The exception's class and its bases, as the child named them
        # (its reply is data: anything else in it is no name).
        if not isinstance(kinds, (list, tuple)):
            kinds = ()
        self.kinds = tuple(k for k in kinds if isinstance(k, str))
        self.where = where


def _refuse_opaque(reply: dict, subject: str) -> None:
    """Failed for a file that made TorchScript or an exported program:
    the checks see Python calls, and a graph hides them."""
    if reply.get("opaque"):
        raise Failed(
            f"{subject} called {', '.join(_names(reply['opaque']))}: the "
            f"grader checks the Python your forward runs, which a "
            f"TorchScript or exported graph hides (PyTorch's own attention "
            f"too): grade the module without torch.jit and torch.export, "
            f"as without torch.compile"
        )


#: faulthandler's first line of a stack it dumps at a time-out.
_WATCHDOG = re.compile(r"Timeout \(\d+:\d\d:\d\d(\.\d+)?\)!")


class TimedOut(Exception):
    """The student's code did not return within the time limit."""


# --- the student's process -----------------------------------------------


#: Where a child comes from: this process's zygote (its key, and it),
#: None once one could not start (then a fresh interpreter each time).
_ZYGOTE: dict = {}


def _forked(root: str, env: dict, path: Path, timeout: float, fds):
    """A fork of this process's zygote (:mod:`mha_ref._zygote`) running
    ``path``, started with the first child; None where there is none
    (not Linux, or it could not start)."""
    if not sys.platform.startswith("linux") or _ZYGOTE.get("failed"):
        return None
    from ._zygote import Forked, Zygote, take_early

    zygote, key = _ZYGOTE.get("zygote"), (root, os.getpid())
    if zygote is None and (zygote := take_early(root)) is not None:
        _ZYGOTE.update(zygote=zygote, key=key)
        atexit.register(zygote.close)
    if zygote is None or not zygote.alive or _ZYGOTE.get("key") != key:
        if zygote is not None and _ZYGOTE["key"][1] == os.getpid():
            zygote.close()  # (a forked grader leaves its parent's alone)
        zygote = Zygote(Path(root), env)
        _ZYGOTE.update(zygote=zygote, key=key)
        atexit.register(zygote.close)
    output, theirs = os.pipe()
    try:
        pid = zygote.spawn(path, timeout, env, (*fds, theirs), STARTUP_S)
    except (OSError, TimeoutError):
        zygote.close()
        os.close(output)
        _ZYGOTE["failed"] = True
        return None
    finally:
        os.close(theirs)
    return Forked(zygote, pid, output)


def _interpreter(root: str, env: dict, path: Path, timeout: float, fds):
    """A fresh interpreter running ``path``: ``_isolate.py`` first, by
    path, before mha_ref (and torch) load."""
    boot = (
        "import sys, importlib.util as u; "
        "s = u.spec_from_file_location('_isolate', "
        "sys.argv[1] + '/mha_ref/_isolate.py'); "
        "m = u.module_from_spec(s); s.loader.exec_module(m); m.isolate(); "
        "sys.path.insert(0, sys.argv[1]); "
        "from mha_ref._sandbox import main; main(sys.argv[2:])"
    )
    return subprocess.Popen(
        [sys.executable, "-I", "-c", boot, root, str(path), str(timeout),
         *map(str, fds)],
        cwd=path.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=fds,
        env=env,
        start_new_session=True,
    )  # fmt: skip


class Child:
    """The child process that runs the student's file; requests and
    replies travel on two pipes this process opened."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        # Each line the file prints is shown indented, after its name,
        # which is the student's to choose: escape codes in it cleared
        # the screen, and a file named "PASS skeleton  ok.py" printed
        # lines that `grep ^PASS` counted as the grader's.
        self.label = "  " + _visible(path.name).replace("\n", "\\n")
        self.timeout = timeout
        #: When the whole grading must end (time.monotonic(); the
        #: Session sets it once the first import is done).
        self.deadline = math.inf
        self.stderr_text = ""  # what the child wrote, kept to locate hangs
        # (pid, start time) of the process running the file
        self.runner: tuple[int, str] | None = None
        #: Why the child ended without an answer, once it has: a request
        #: after that is told the same (it read a closed pipe, and the
        #: ValueError read as "unreadable answer": an attacker's audit).
        self.gone: str | None = None
        self._ids = 0
        to_child, self._requests = os.pipe()
        self._replies, from_child = os.pipe()
        root = str(Path(__file__).resolve().parents[1])
        env = child_env(os.environ)
        fds = (to_child, from_child)
        self.process = _forked(root, env, path, timeout, fds) or _interpreter(
            root, env, path, timeout, fds
        )
        os.close(to_child)
        os.close(from_child)
        os.set_blocking(self._requests, False)
        self._relay = threading.Thread(target=self._relay_output, daemon=True)
        self._relay.start()

    def _relay_output(self) -> None:
        """The student's prints, shown on stderr and kept, both bounded;
        read in chunks (a line without end was held whole), and with
        control characters shown, not obeyed (a carriage return and
        escape codes drew PASS lines over the grader's own)."""
        shown, pending = 0, ""
        for raw in iter(lambda: self.process.stdout.read1(1 << 16), b""):
            text = _visible(raw.decode("utf-8", "replace"))
            self.stderr_text = (self.stderr_text + text)[-KEPT:]
            *lines, pending = (pending + text).split("\n")
            if len(pending) > 4096:  # a line without end: show it cut
                lines, pending = [*lines, pending], ""
            for line in lines:
                # A stuck call's stack (the child's watchdog, its last
                # words): kept for the FAIL line, which says where; shown,
                # it was a dozen lines of the grader's own frames.
                if _WATCHDOG.fullmatch(line):
                    shown = SHOWN
                if shown < SHOWN:
                    shown += len(line)
                    self._show(f"{self.label}| {line[:SHOWN]}\n")
                    if shown >= SHOWN:
                        self._show(f"{self.label}| (output cut)\n")
        if pending and shown < SHOWN:
            self._show(f"{self.label}| {pending}\n")

    @staticmethod
    def _show(text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def load(self) -> dict:
        during = IMPORTING
        with self._in_all(during):
            return self._reply(self._left(self.timeout + STARTUP_S), during)

    def _left(self, limit: float) -> float:
        """``limit``, or what is left of the whole grading's time (none
        left: TimedOut, which :meth:`_in_all` words)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimedOut
        return min(limit, left)

    def _over(self, during: str) -> str:
        self.close()
        return self._over_text(self.timeout, f", during {during}")

    @staticmethod
    def _over_text(timeout: float, during: str = "") -> str:
        return (
            f"the grading ran past its {TOTAL_TIMEOUTS * timeout:g} s "
            f"in all{during}: your code is slow on every call (a "
            f"correct module grades in about a second); look for a sleep, "
            f"a wait or a loop that runs long"
        )

    @contextlib.contextmanager
    def _in_all(self, during: str):
        """A time-out that the whole grading's end caused says so."""
        try:
            yield
        except TimedOut:
            if time.monotonic() < self.deadline:
                raise
            raise TimedOut(self._over(during)) from None

    def request(self, op: str, subject: str, **fields) -> dict:
        """Send one request; its reply, or StudentError / TimedOut.
        ``subject``: what runs, for messages ("forward at h=2")."""
        if self.gone:
            raise StudentError(self.gone)
        start = time.monotonic()
        # Past the limit, the child's watchdog gets this long to say
        # where it stopped (10 s at the default limit); the grader's own
        # deadline ends a call whose watchdog the file cancelled.
        with self._in_all(subject):
            limit = self._left(self.timeout + max(5.0, self.timeout / 2))
            try:
                self._send({"op": op, **fields}, limit, subject)
            except OSError:
                self._reply(0, subject)  # the child has gone: say how
            reply = self._reply(limit, subject)
        # The child's own watchdog stops a call at the limit, but the
        # student's code can cancel it: the limit is kept here too.
        took = time.monotonic() - start
        if took > self.timeout:
            self.close()
            raise TimedOut(
                f"{subject} took {took:.0f} s, over the limit of "
                f"{self.timeout:g} s: look for a loop or a wait that never "
                f"ends"
            )
        if reply.get("torch_mha"):
            raise Failed(
                f"{subject} ran PyTorch's own multi-head attention "
                f"({', '.join(reply['torch_mha'])}), the layer this grader "
                f"compares against, not your code: write the projections, "
                f"the head split, the attention and the merge yourself "
                f"(F.scaled_dot_product_attention may do the attention)"
            )
        if not reply.get("ok"):
            raise StudentError(
                f"{subject} raised {reply.get('error')} "
                f"({reply.get('where')}){_lesson_hint(reply.get('error'))}",
                reply.get("types", ()),
                reply.get("where", ""),
                reply.get("error", ""),
            )
        _refuse_opaque(reply, subject)
        if reply.get("hidden"):
            raise Failed(
                f"{subject} called {', '.join(map(str, reply['hidden']))}, "
                f"which turns off the hook this grader sees your code's "
                f"calls with: what ran after it cannot be graded as yours; "
                f"remove the call"
            )
        if reply.get("reference"):
            raise Failed(
                f"{subject} ran the lesson's reference, not your code "
                f"({', '.join(reply['reference'][:3])} in mha_ref/): "
                f"the grade is of what you write; write it in your file"
            )
        return reply

    def new_id(self) -> int:
        self._ids += 1
        return self._ids

    def _send(self, message: dict, limit: float, during: str) -> None:
        """Write a request, within ``limit`` seconds: a child that stops
        reading (its pipe made small) must not block the grader."""
        view = memoryview(encode(message))
        deadline = time.monotonic() + limit
        while view:
            left = deadline - time.monotonic()
            _, ready, _ = select.select([], [self._requests], [], max(left, 0))
            if not ready:
                self.close()
                raise TimedOut(self._stuck(during))
            try:  # non-blocking: never more than the pipe takes now
                view = view[os.write(self._requests, view) :]
            except BlockingIOError:
                pass

    def _note_runner(self) -> None:
        """The pid of the process running the file (the waiting process's
        child in its namespace), while it can be read."""
        if self.runner is None and self.process.poll() is None:
            pid = self.process.pid
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    runner = int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                return
            self.runner = (runner, _started(runner))

    def _reply(self, limit: float, during: str) -> dict:
        self._note_runner()
        deadline = time.monotonic() + limit
        header = self._read(8, deadline, during)
        size = int.from_bytes(header, "little")
        if size > MAX_REPLY:
            self.close()
            raise StudentError(
                f"the process running your file answered {during} with "
                f"{size:,} bytes, more than any answer of the grader's "
                f"({MAX_REPLY:,}): your file wrote into its reply pipe"
            )
        data = self._read(size, deadline, during)
        if not _laid_flat(data):
            self.close()
            raise StudentError(
                f"the grading process sent, for {during}, a reply that is "
                f"not the grader's: your file wrote into its reply pipe"
            )
        try:
            reply = torch.load(io.BytesIO(data), weights_only=True)
        except Exception as error:  # noqa: BLE001 - not the child's format
            self.close()
            raise StudentError(
                f"the grading process sent an unreadable reply {during} "
                f"({type(error).__name__})"
            ) from None
        if not isinstance(reply, dict) or not _bounded(reply):
            self.close()
            raise StudentError(
                f"the grading process sent, for {during}, a reply that is "
                f"not the grader's: your file wrote into its reply pipe"
            )
        # Cut again here (the child cuts its own, but the file runs in
        # it): a raise of 180 KB was printed on each of 7 FAIL lines, and
        # the float64 hint's pattern took minutes on it, outside every
        # time limit (an attacker's audit).
        for part in (reply, reply.get("backward")):
            for key in ("error", "where") if isinstance(part, dict) else ():
                if isinstance(text := part.get(key), str):
                    part[key] = said(text)
        return reply

    def _read(self, size: int, deadline: float, during: str) -> bytes:
        chunks = []
        while size:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._replies], [], [], max(left, 0))
            if not ready:
                self.close()
                raise TimedOut(self._stuck(during))
            chunk = os.read(self._replies, min(size, 1 << 20))
            if not chunk:
                self.close()
                raise self._ended(during)
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _ended(self, during: str) -> Exception:
        """The child is gone: a timeout (its own watchdog dumped the
        stack) or an exit of the student's making."""
        status = self.process.returncode
        if "Timeout (" in self.stderr_text:
            return TimedOut(self._stuck(during))
        held = re.search(r"held more than \d+ MiB together", self.stderr_text)
        if held and status is not None and status < 0:
            # The memory watcher's SIGKILL: not "your code sent it" (an
            # attacker's audit).
            self.gone = (
                f"the processes your file started {held[0]}, and were "
                f"stopped in {during}: free what it holds (a tensor, a "
                f"buffer or a pipe kept full)"
            )
        elif status is not None and status < 0:
            # A signal, not an exit: "do not call exit()" blamed a call
            # the file never made (an attacker's audit: os.kill, SIGKILL).
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            self.gone = (
                f"the process running your file was stopped by {name} in "
                f"{during}, without an answer: your code or something it "
                f"started sent it (os.kill, a killed process group)"
            )
        else:
            self.gone = (
                f"the process running your file ended in {during} (exit "
                f"status {status}), without an answer: do not call exit(), "
                f"sys.exit() or os._exit() in the module"
            )
        return StudentError(self.gone)

    def _stuck(self, during: str) -> str:
        dump = self.stderr_text.rpartition("Timeout (")[2]
        name = re.escape(str(self.path))
        found = re.search(rf'File "{name}", line (\d+) in (\S+)', dump)
        where = (
            f"{self.path.name}:{found[1]} in {found[2]}"
            if found
            else "no line of your file on the stack"
        )
        compiling = "torch/_dynamo" in dump or "torch/_inductor" in dump
        if not found and not compiling:
            # The watchdog reads the other thread's frames while they
            # change: mid-compile, its dump was cut after one frame (in
            # jinja2, which inductor's templates use) on 1 run of 7. The
            # file's own text says whether it compiles.
            try:
                compiling = "torch.compile" in self.path.read_text("utf-8")
            except (OSError, UnicodeDecodeError):
                pass
        if compiling:
            # A correct module's torch.compile (an audit): compiling takes
            # longer than a call may, and its compiler needs more scratch
            # space than the grading process has.
            return (
                f"no result after {self.timeout:g} s from {during}, still "
                f"compiling (torch.compile, at {where}): the grader cannot "
                f"wait for a compiler; grade the module without "
                f"torch.compile"
            )
        if during == IMPORTING:
            # A demo or training loop left at the top level of the file,
            # or a function it calls there (train() at the file's end).
            return (
                f"no result after {self.timeout:g} s from {during}, still "
                f"running at {where}: the top level of your file runs when "
                f"it is imported; put a demo or a training loop under "
                f'if __name__ == "__main__":'
            )
        return (
            f"no result after {self.timeout:g} s from {during}, still running "
            f"at {where}: look for a loop that never ends"
        )

    def close(self) -> None:
        """End the child (it may be stuck) and wait for it: the process
        running the file too, which may have left the group (setsid) or
        killed the waiting process (PID 1 of its namespace: all of it)."""
        self._note_runner()
        if self.runner and _started(self.runner[0]) == self.runner[1]:
            _kill(self.runner[0])  # still that process, not a reused pid
        if self.process.poll() is None:
            _kill(-self.process.pid)
            # Itself too: a fork not yet in its own group (setsid) was
            # missed, and the wait below never ended (its PID 1 dies
            # with it).
            _kill(self.process.pid)
        self.process.wait()
        self._relay.join(timeout=5)
        for fd in (self._requests, self._replies):
            try:
                os.close(fd)
            except OSError:
                pass
        self._requests = self._replies = -1


# --- one module in the child, and its weights here ----------------------


@dataclass
class Module:
    """A student module living in the child, with the weights sent to it."""

    id: int
    h: int
    weights: dict[str, torch.Tensor]  # name -> (d_model, d_model)
    forward_parameters: list[str]
    positional: list[str] = field(default_factory=list)  # by position
    no_forward: bool = False  # nn.Module's: the class defines none
    calls: int = 0  # forward calls so far

    def by_position(self, call: dict) -> bool:
        """Whether ``mask`` and ``is_causal`` may go by position: the
        lesson's order, or an ``*args`` that takes them (and no keyword
        parameter of those names: ``forward(self, *tensors, mask=None)``
        takes the mask by keyword only)."""
        wanted = ["mask", "is_causal"][: len(call)]
        names = self.forward_parameters
        return self.positional[3 : 3 + len(wanted)] == wanted or (
            "*" in names and not set(wanted) & set(names)
        )


class Session:
    """One grading run: the child, the random inputs, what passed."""

    def __init__(self, path: Path, timeout: float, seed: int) -> None:
        self.path = path
        self.timeout = timeout
        self.deadline = math.inf  # the whole grading's: see TOTAL_TIMEOUTS
        self.gen = torch.Generator().manual_seed(seed)
        self.passed: set[str] = set()
        self.current = ""  # the milestone running
        self.child: Child | None = None
        self.live: list[int] = []  # modules the child holds
        # The last forward call: its module, request and what came back
        # (None: it raised), for :func:`_kept_from_before`.
        self.last: dict | None = None
        self.calls = 0  # Python and C calls the last forward made
        self.held = None  # what the module held after it (_keeps_more)

    def start(self) -> None:
        """Start the child and import the student's file in it."""
        self.child = Child(self.path, self.timeout)
        self.child.deadline = self.deadline
        self.live = []
        reply = self.child.load()
        if self.deadline == math.inf:
            self.deadline = time.monotonic() + TOTAL_TIMEOUTS * self.timeout
            self.child.deadline = self.deadline
        if not reply.get("ok"):
            raise StudentError(
                f"raised {reply.get('error')} ({reply.get('where')})"
                f"{_lesson_hint(reply.get('error'))}"
            )
        _refuse_opaque(reply, f"{self.path.name}'s import")
        if not reply.get("class"):
            # (nn.MultiheadAttention's spelling, a small h, was told only
            # that the file defines no class.)
            found = reply.get("classes") or []
            also = (
                f"; it defines {', '.join(_names(found))}: the grader "
                f"looks for the name MultiHeadAttention exactly, a "
                f"subclass of nn.Module"
                if found
                else ""
            )
            raise Failed(
                f"{self.path.name} defines no class "
                f"MultiHeadAttention(nn.Module){also}"
            )

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None

    def new(self, d_model: int, h: int) -> dict:
        """Construct ``MultiHeadAttention(d_model, h)`` in the child."""
        id = self.child.new_id()
        reply = self.child.request(
            "new", f"MultiHeadAttention({d_model}, {h})",
            id=id, args=[d_model, h],
        )  # fmt: skip
        reply["id"] = id
        self.live.append(id)
        return reply

    def drop(self, ids: list[int] | None = None) -> None:
        """Let the child forget these modules (default: every one)."""
        ids = list(self.live) if ids is None else ids
        if ids:
            self.child.request("drop", "forgetting modules", ids=ids)
        self.live = [i for i in self.live if i not in ids]

    def module(self, h: int, d_model: int = D_MODEL, weights=None) -> Module:
        """A module holding ``weights`` (default: new :meth:`weights`)."""
        info = self.new(d_model, h)
        problem = _projection_problem(info, d_model)
        if problem:
            raise Failed(
                f"not graded until milestone skeleton passes: {problem}"
            )
        # Called as forward(x, x, x), a forward(x, mask, is_causal) got
        # the key as its mask: every later line then named something
        # else (a project student's run).
        positional = list(map(str, info.get("positional") or []))
        problem = _signature_problem(info["forward"], positional)
        if problem:
            raise Failed(
                problem
                if self.current == "shapes"
                else f"not graded until milestone shapes passes: {problem}"
            )
        weights = self.weights(d_model) if weights is None else weights
        self.child.request(
            "set",
            "copying weights into W_Q, W_K, W_V, W_O",
            id=info["id"],
            weights=weights,
        )
        return Module(
            info["id"],
            h,
            weights,
            list(info["forward"]),
            positional,
            no_forward=info.get("no_forward") is True,
        )

    def weights(self, d_model: int) -> dict[str, torch.Tensor]:
        """Random W_Q..W_O of std 2/sqrt(d): scores of a few units, so
        wrong scales and masks move the softmax far beyond the
        tolerance."""
        return {
            name: torch.randn(d_model, d_model, generator=self.gen)
            * 2
            / d_model**0.5
            for name in PROJECTIONS
        }

    def inputs(self, B: int, T: int, d_model: int = D_MODEL) -> torch.Tensor:
        return torch.randn(B, T, d_model, generator=self.gen)  # (B, T, d)

    def forward(
        self, module: Module, args: tuple, *, where: str, train=False,
        grads=None, grad_on=False, held=False, **kwargs,
    ):  # fmt: skip
        """Call the student's forward; (output, weights) checked for
        structure, ``None`` and dtype before anything is compared, and
        shapes; with ``grads`` also the gradients of the four weights and
        of query, key and value. ``grad_on``: called with gradients on,
        without a backward pass. ``held``: :attr:`held` says what the
        module holds after the call (None without)."""
        query, key = args[0], args[1]
        B, T_q, d_model = query.shape
        T_k = key.size(1)
        request = dict(
            id=module.id, args=list(args), kwargs=kwargs, train=train,
            grads=grads, grad_on=grad_on, held=held,
        )  # fmt: skip
        module.calls += 1
        self.last = {"module": module, "request": request, "items": None}
        reply = self.child.request("call", f"forward {where}", **request)
        items = reply["items"]
        self.calls = reply.get("calls", 0)
        self.held = reply.get("held")
        # What forward did, named in its own words (no replay needed).
        if named := _named_in_reply(reply, where):
            self.last = None
            raise Failed(named)
        self.last = {**self.last, "items": items}
        if isinstance(items, str) or len(items) != 2:
            what = (
                items
                if isinstance(items, str)
                else (f"a {len(items)}-item sequence")
            )
            raise Failed(
                f"forward returned {what}; it must return the tuple "
                f"(output, weights)"
            )
        for name, item in zip(("output", "weights"), items, strict=True):
            if not isinstance(item, torch.Tensor):
                fix = (
                    "; return the attention weights too, the softmax "
                    "(B, h, T_q, T_k) (F.scaled_dot_product_attention does "
                    "not give them: compute the softmax yourself)"
                    if name == "weights"
                    else ""
                )
                raise Failed(f"forward returned {item} as the {name}{fix}")
            if item.dtype != torch.float32:
                raise Failed(
                    f"the {name} are {item.dtype}, expected torch.float32 "
                    f"like the input and the weights: compute in the "
                    f"input's dtype (no .double(), no dtype=torch.float64)"
                )
        _check_shapes(*items, (B, T_q, d_model), (B, module.h, T_q, T_k))
        if grads is None:
            return tuple(items)
        if "backward" in reply:
            back = reply["backward"]
            raise StudentError(
                f"backward through your forward {where} raised "
                f"{back['error']} ({back['where']})"
                f"{_backward_hint(back['error'])}"
            )
        grads = reply.get("grads")
        shapes = {n: module.weights[n].shape for n in PROJECTIONS}
        shapes |= {n: a.shape for n, a in zip(ARGUMENTS, args, strict=False)}
        for name, want in shapes.items():  # None: no gradient (a cut graph)
            got = grads.get(name) if isinstance(grads, dict) else "missing"
            if got is not None and getattr(got, "shape", None) != want:
                raise StudentError(
                    f"the gradient of {name} is not a {tuple(want)} tensor: "
                    f"the grading process's reply was tampered with"
                )
        return tuple(items), grads


def _named_in_reply(reply: dict, where: str) -> str | None:
    """What the child saw forward do to its arguments, its weights, the
    random state, autograd or its module, in its own words (each is
    state, or harm to the caller, named before any value); None if
    nothing."""
    if reply.get("changed"):
        changed = _names(reply["changed"])
        example = (
            "~mask, x.masked_fill(...), not x.masked_fill_(...)"
            if "mask" in changed
            else "q = q / scale, not q /= scale or q.div_(scale)"
        )
        return (
            f"forward changed its {' and '.join(changed)} argument in "
            f"place: the caller's tensors must stay as they were "
            f"(another layer may use the same ones); use out-of-place "
            f"operations ({example})"
        )
    if reply.get("moved"):
        return (
            f"forward changed the weights of "
            f"{', '.join(_names(reply['moved']))} (.weight.data /= ..., "
            f"copy_, mul_): a forward pass leaves the parameters as "
            f"they are, or each call computes something else; scale "
            f"the scores (q @ k.transpose(-2, -1) / sqrt(d_k)), not "
            f"the weights"
        )
    if reply.get("rng"):
        return (
            f"forward {where} changed torch's random number generator in "
            f"eval mode (torch.manual_seed, or a random draw): every "
            f"later random number of the caller's changes with it; "
            f"seed once, outside the module, and draw nothing in forward "
            f"(dropout runs only when self.training)"
        )
    if reply.get("grad_mode") in ("on", "off"):
        return (
            f"forward turned gradients {reply['grad_mode']} and left "
            f"them so (torch.set_grad_enabled(...) as a statement): "
            f"every later computation of the caller's then "
            f"{'loses' if reply['grad_mode'] == 'off' else 'builds'} "
            f"its graph; use it as a block, with "
            f"torch.set_grad_enabled(...): (or torch.no_grad():), "
            f"which restores the mode"
        )
    if reply.get("registered"):
        names = ", ".join(_names(reply["registered"]))
        return (
            f"forward registered {names} on the module (register_buffer "
            f"or a new nn.Parameter in forward): its state_dict then "
            f"depends on whether it was called, and a saved model does "
            f"not load into a new one; register it in __init__ (a "
            f"cache made in forward: register_buffer(..., "
            f"persistent=False), outside the state_dict), or keep it "
            f"a local tensor"
        )
    if reply.get("kept_graph"):
        names = ", ".join(_names(reply["kept_graph"]))
        return (
            f"forward keeps a tensor of the call's graph in {names} "
            f"(a collection it adds to): in training every step's "
            f"graph then stays in memory; keep .detach()ed copies, or "
            f"none"
        )
    if reply.get("overwritten"):
        names = " and ".join(_names(reply["overwritten"]))
        return (
            f"the {names} an earlier call returned changed when forward "
            f"ran {where}: forward fills a tensor it keeps (on self) and "
            f"returns that same tensor each call, so the caller's "
            f"earlier result is overwritten; return new tensors each "
            f"call"
        )
    return None


FROM_BEFORE = "forward keeps something from an earlier call"


def _kept_from_before(s: Session) -> str:
    """Why the last call failed, when it was not the module's first and
    the module's history is the cause: the same call made on two new
    modules with the same weights agrees with itself and not with the
    failing one. A score, key or weights kept on ``self`` by the call
    before were blamed on the mask, on randomness or on the shapes (an
    expert's audit, round 10). "" otherwise (a random module disagrees
    with itself too)."""
    last = s.last
    if not last or last["module"].calls < 2 or s.child is None:
        return ""
    module = last["module"]
    d_model = module.weights["W_Q"].shape[0]
    answers = []
    for _ in range(2):
        again = s.module(module.h, d_model, weights=module.weights)
        request = {**last["request"], "id": again.id}
        try:
            reply = s.child.request(
                "call", "forward, on a new module", **request
            )
            answers.append(reply["items"])
        except StudentError:
            answers.append(None)
    if not _same_items(*answers) or _same_items(answers[0], last["items"]):
        return ""
    before = module.calls - 1
    return (
        f"{FROM_BEFORE}: this module had been called "
        f"{'once' if before == 1 else f'{before} times'} before, and a new "
        f"module with the same weights answers the same call "
        f"{'without raising' if last['items'] is None else 'differently'} "
        f"(scores, keys, values or weights saved on self and used by the "
        f"next call); compute each call from its own arguments and the "
        f"weights alone"
    )


def _same_items(a, b) -> bool:
    """Two replies' items: both raised (None), or equal tensors."""
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return a == b
    return len(a) == len(b) and all(
        torch.is_tensor(x) and torch.is_tensor(y) and x.shape == y.shape
        and torch.equal(x, y)
        for x, y in zip(a, b, strict=True)
    )  # fmt: skip


def _projection_problem(info: dict, d_model: int) -> str | None:
    for name, layer in info["projections"].items():
        if layer["type"] == "NoneType":
            return (
                f"no attribute {name}: name the four projections "
                f"W_Q, W_K, W_V, W_O"
            )
        if not layer["linear"]:
            return f"{name} is a {layer['type']}, expected nn.Linear"
        if layer["bias"]:
            return (
                f"{name} has a bias: use nn.Linear(d_model, d_model, "
                f"bias=False)"
            )
        if layer["shape"] != [d_model, d_model]:
            return (
                f"{name}.weight is {tuple(layer['shape'])}, expected "
                f"({d_model}, {d_model}): each projection maps all d_model "
                f"features to d_model features; the heads share it"
            )
        if layer["dtype"] != "torch.float32":
            return (
                f"{name}.weight is {layer['dtype']}, expected torch.float32:"
                f" create the layers without dtype=, .double() or "
                f"torch.set_default_dtype"
            )
    return None


def _backward_hint(error: str) -> str:
    # (A boolean tensor changed in place is a mask: the softmax hint sent
    # a student who inverted the caller's mask in place to a softmax that
    # was right; an expert's review.)
    if "inplace operation" in error and "BoolType" in error:
        return (
            ": a mask was changed in place (logical_not_(), &=, ^=), "
            "and backward needs it as it was: make a new one (~mask, "
            "mask & causal)"
        )
    if "inplace operation" in error:
        return (
            ": an in-place operation (a method ending in _, or /= on a "
            "tensor) overwrote a value backward needs; compute the "
            "weights with torch.softmax(scores, dim=-1), out of place"
        )
    if "does not require grad" in error:
        return (
            ": no gradient reaches the weights W_Q..W_O; do not call "
            ".detach() or run forward under torch.no_grad() (nor "
            "inference_mode, nor only when not self.training: "
            "model.eval() leaves gradients on, the caller chooses)"
        )
    return ""


# --- the references, computed here ----------------------------------------


def _allowed_4d(allowed, B, h, T_q, T_k):
    return allowed.expand(B, h, T_q, T_k)  # (B, h, T_q, T_k)


def twin(module: Module, query, key, value, allowed=None, grads=None):
    """``nn.MultiheadAttention`` holding the module's weights, in float64.

    Its boolean masks mean True = blocked, so ``allowed`` (broadcasting
    to ``(B, h, T_q, T_k)``) is inverted and given per head. With
    ``grads`` (for output, weights), one backward pass in train mode:
    returns ((output, weights), {name: gradient}); all as float32.

    Why float64: in float32, torch's own rounding (it scales q before
    the product) put a correct module 1.4e-5 away on 2 of 3,000 seeds
    (an expert's audit: against float64 the student's error was 3.1e-6,
    torch's 1.7e-5), past ``ATOL``; the exact value leaves the student's
    float32 rounding alone to the tolerance.
    """
    w = {name: weight.double() for name, weight in module.weights.items()}
    # One leaf per tensor, as the student's forward is called: one tensor
    # passed as all three (self-attention) gets the three uses' gradient.
    made = {}
    inputs = {}
    for name, t in (("query", query), ("key", key), ("value", value)):
        if id(t) not in made:
            made[id(t)] = t.double().requires_grad_(grads is not None)
        inputs[name] = made[id(t)]
    query, key, value = inputs.values()
    h = module.h
    B, T_q, d_model = query.shape
    T_k = key.size(1)
    mha = nn.MultiheadAttention(
        d_model, h, bias=False, batch_first=True, dtype=torch.float64
    )
    with torch.no_grad():
        mha.in_proj_weight.copy_(
            torch.cat([w["W_Q"], w["W_K"], w["W_V"]])
        )  # (3 * d_model, d_model)
        mha.out_proj.weight.copy_(w["W_O"])
    kwargs = {}
    if allowed is not None:
        blocked = ~_allowed_4d(allowed, B, h, T_q, T_k)
        kwargs["attn_mask"] = blocked.reshape(B * h, T_q, T_k)
    mha.train(grads is not None)
    with torch.set_grad_enabled(grads is not None):
        out, weights = mha(
            query, key, value, average_attn_weights=False, **kwargs
        )  # (B, T_q, d_model), (B, h, T_q, T_k)
    if grads is None:
        return out.float(), weights.float()
    up_out, up_weights = (g.double() for g in grads)
    ((out * up_out).sum() + (weights * up_weights).sum()).backward()
    g_q, g_k, g_v = mha.in_proj_weight.grad.float().chunk(3)  # each (d, d)
    got = {
        "W_Q": g_q, "W_K": g_k, "W_V": g_v,
        "W_O": mha.out_proj.weight.grad.float(),
    }  # fmt: skip
    got |= {name: t.grad.float() for name, t in inputs.items()}
    return (out.detach().float(), weights.detach().float()), got


def _merge_by_view(ctx: torch.Tensor) -> torch.Tensor:
    """The inverse of the direct view: ``(B, h, T, d_k) -> (B, T, d)``."""
    B, h, T, d_k = ctx.shape
    return ctx.contiguous().view(B, T, h * d_k)  # (B, T, d_model), scrambled


def _merge_features_first(ctx: torch.Tensor) -> torch.Tensor:
    """A merge that keeps every shape, in (d_k, h) order: each output
    feature interleaves the heads, ``(B, h, T, d_k) -> (B, T, d)``."""
    B, h, T, d_k = ctx.shape
    return ctx.permute(0, 2, 3, 1).reshape(B, T, d_k * h)  # scrambled


def reference(
    module: Module, query, key, value, allowed=None, *,
    split: Callable = split_heads, merge: Callable = merge_heads,
    scale: str = "d_k", softmax_dim: int = -1, w_o: bool = True,
    value_from: str = "value", key_from: str = "key",
    out_weight: str = "W_O", residual: bool = False,
    stored: tuple[str, ...] = (),
):  # fmt: skip
    """Multi-head attention from the module's weights, with one bug in.

    ``stored``: the projections multiplied by ``weight`` as stored, not
    its transpose, as ``nn.Linear`` does. Only used to name a bug; the
    expected values come from :func:`twin`.
    """
    w, h = dict(module.weights), module.h
    w |= {name: w[name].T for name in stored}
    given = {"value": value, "key": key, "query": query}
    q = split(query @ w["W_Q"].T, h)  # (B, h, T_q, d_k)
    k = split(given[key_from] @ w["W_K"].T, h)  # (B, h, T_k, d_k)
    v = split(given[value_from] @ w["W_V"].T, h)  # (B, h, T_k, d_k)
    d_k, d_model = q.size(-1), query.size(-1)
    divisor = {
        "d_k": math.sqrt(d_k),
        "inverted": 1 / math.sqrt(d_k),
        "d_model": math.sqrt(d_model),
        "unrooted d_k": d_k,
        "none": 1.0,
    }[scale]
    scores = q @ k.transpose(-2, -1) / divisor  # (B, h, T_q, T_k)
    if isinstance(allowed, str):  # "causal": a mask the call did not ask for
        allowed = causal(q.size(-2), k.size(-2))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=softmax_dim)  # (B, h, T_q, T_k)
    merged = merge(weights @ v)  # (B, T_q, d_model)
    out = merged @ w[out_weight].T if w_o else merged
    return (out + query if residual else out), weights


def causal(T_q: int, T_k: int, offset: int = 0) -> torch.Tensor:
    """(T_q, T_k), True where query i sees key j: j <= i + offset."""
    return torch.ones(T_q, T_k, dtype=torch.bool).tril(offset)


def padding(lengths: list[int], T_k: int) -> torch.Tensor:
    """(B, 1, 1, T_k), True for the first ``length`` keys of each row."""
    real = torch.arange(T_k)[None, :] < torch.tensor(lengths)[:, None]
    return real[:, None, None, :]  # (B, 1, 1, T_k)


# hint, changes to the reference: each a bug that keeps every shape, tried
# whenever values differ (a mask's own suspects are given by its check).
VALUE_SUSPECTS: tuple[tuple[str, dict], ...] = (
    (
        "your split is view(B, h, T, d_k), the direct view ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-direct-view): it cuts whole positions into "
        "pieces; view to (B, T, h, d_k) first, then "
        "transpose(1, 2)",
        {"split": split_heads_direct_view},
    ),
    (
        "your split is view(B, h, T, d_k), the direct view ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-direct-view), and your merge its inverse: "
        "view to (B, T, h, d_k) first, then transpose(1, 2)",
        {"split": split_heads_direct_view, "merge": _merge_by_view},
    ),
    (
        "your split transposes to (B, d_model, T) before reshaping ("
        "slides/40-rule-out-three-check-yourself-reshape-order.html"
        "#ex-split-heads-transpose-first): view to (B, T, h, d_k) "
        "first, then transpose(1, 2)",
        {"split": split_heads_transpose_first},
    ),
    (
        "your merge skips the transpose back: transpose(1, 2).contiguous() "
        "before view(B, T, d_model)",
        {"merge": _merge_by_view},
    ),
    (
        "you divide the scores by sqrt(d_model); divide by sqrt(d_k) = "
        "sqrt(d_model / h) (the two agree only at h=1)",
        {"scale": "d_model"},
    ),
    (
        "the scores are not scaled (or scaled by something that is 1 "
        "in this call, as sqrt(h) is at h=1): divide q @ k.transpose(-2, "
        "-1) by sqrt(d_k) before the softmax",
        {"scale": "none"},
    ),
    (
        "you divide the scores by d_k; divide by its square root, sqrt(d_k)",
        {"scale": "unrooted d_k"},
    ),
    (
        "you multiply the scores by sqrt(d_k) (dividing by 1/sqrt(d_k)): "
        "divide them by sqrt(d_k)",
        {"scale": "inverted"},
    ),
    (
        "your softmax runs over the queries; run it over the keys, dim=-1",
        {"softmax_dim": -2},
    ),
    (
        "your merge orders each position's features as (d_k, h), the "
        "heads interleaved: transpose(1, 2) to (B, T, h, d_k), then "
        "reshape to (B, T, d_model), so head 0's d_k features come first",
        {"merge": _merge_features_first},
    ),
    (
        "you multiply by W_O.weight as it is stored: nn.Linear computes "
        "x @ weight.T; call self.W_O(merged heads)",
        {"stored": ("W_O",)},
    ),
    (
        "you multiply by each projection's weight as it is stored: "
        "nn.Linear computes x @ weight.T; call self.W_Q(query), "
        "self.W_K(key), self.W_V(value) and self.W_O(...)",
        {"stored": ("W_Q", "W_K", "W_V", "W_O")},
    ),
    ("you never apply W_O: return self.W_O(merged heads)", {"w_o": False}),
    (
        "the merged heads go through W_V, not W_O: return "
        "self.W_O(merged heads)",
        {"out_weight": "W_V"},
    ),
    (
        "your output adds the query (a residual connection): the layer "
        "returns W_O(merged heads) alone; a transformer block adds the "
        "residual around it",
        {"residual": True},
    ),
    (
        "your forward masks the future though this call did not ask for "
        "it: is_causal must default to False (forward(query, key, value, "
        "mask=None, is_causal=False)), and a causal mask applies only when "
        "it is True",
        {"allowed": "causal"},
    ),
    (
        "you project the key with W_V; the values are W_V(value), and "
        "value may differ from key",
        {"value_from": "key"},
    ),
)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal within float32 tolerance; NaN and 0 count as the same, since
    a fully masked row is NaN in a plain softmax and 0 in ``mha_ref``.

    The absolute part scales with the tensor's largest value: an element
    near 0 is a sum of terms as large as the others, and keeps their
    rounding (a correct module's outputs up to 17 were 2.1e-5 off the
    exact value in one seed of 3,000: an expert's audit). Weights are
    at most 1, so their tolerance stays ``ATOL``."""
    if a.shape != b.shape:
        return False
    a, b = a.nan_to_num(0.0), b.nan_to_num(0.0)
    return torch.allclose(a, b, atol=ATOL * _scale(b), rtol=ATOL)


def _scale(t: torch.Tensor) -> float:
    """The largest value's size, at least 1: what an absolute tolerance
    is measured against (``_close``, ``_near``)."""
    return max(1.0, t.nan_to_num(0.0).abs().max().item()) if t.numel() else 1.0


def _differences(got, want) -> list[str]:
    out = []
    for name, a, b in zip(("output", "weights"), got, want, strict=True):
        if _close(a, b):
            continue
        verb = "differs" if name == "output" else "differ"
        if a.isnan().any() and not b.isnan().any():
            out.append(f"{name} {verb}: yours holds NaN")
            continue
        diff = (a.nan_to_num(0.0) - b.nan_to_num(0.0)).abs().max().item()
        out.append(f"{name} {verb} by up to {diff:.3g}")
    return out


def _cause(module, inputs, got, want, suspects) -> str | None:
    """The first suspect whose numbers are the student's, or None.

    ``suspects``: (hint, changes to :func:`reference`), each changes dict
    may carry ``allowed``. A suspect that gives the expected values
    ``want``, or computes exactly what the right formula does at these
    sizes (the direct view at h=1 is the split itself), names no bug:
    skipped (a correct module's rounding got the direct view's hint).
    """
    for hint, change in suspects:
        try:
            suspect = reference(module, *inputs, **change)
        except RuntimeError:  # e.g. the transpose-first view on these sizes
            continue
        if all(_close(a, b) for a, b in zip(suspect, want, strict=True)):
            continue
        if set(change) - {"allowed"}:  # a bug in the computation itself
            base = reference(module, *inputs, allowed=change.get("allowed"))
            if all(map(torch.equal, suspect, base)):
                continue  # a no-op at these sizes
        if all(_close(a, b) for a, b in zip(got, suspect, strict=True)):
            return hint
    return None


def compare(
    module, inputs, got, want, where, *, suspects=(), otherwise="",
    because="",
):  # fmt: skip
    """Raise Failed naming what differs and its likely cause.

    ``because``: the cause when anything differs, as the calls before
    leave only it (train mode after eval mode passed: the output path's
    hint sent a module with dropout to look for a second SDPA call).
    """
    differ = _differences(got, want)
    if not differ:
        return
    if because:
        cause = because
    elif _averaged(got[1], want[1]):
        cause = (
            "the weights returned are the heads' average, repeated on "
            "the head axis: return each head's own, (B, h, T_q, T_k)"
        )
    # (Only where the output is wrong too: weights returned transposed,
    # (B, h, T_k, T_q), sum to 1 over the queries, and "run it over the
    # keys" broke a right output: an expert's review.)
    elif not _close(got[0], want[0]) and (axis := _softmax_axis(got[1])):
        cause = (
            f"your softmax runs over the {axis} (the weights sum to 1 "
            f"there, not over the keys); run it over the keys, dim=-1"
        )
    else:
        cause = (
            _cause(module, inputs, got, want, suspects)
            or (_near(got, want) and PRECISION)
            or (_close(got[1], want[1]) and OUTPUT_PATH)
            or (_close(got[0], want[0]) and _transposed(got[1], want[1]))
            or (_close(got[0], want[0]) and _weights_path(module, inputs, got))
            or otherwise
        )
    raise Failed(f"{' and '.join(differ)} {where}: {cause}")


def _softmax_axis(weights: torch.Tensor) -> str | None:
    """The axis of (B, h, T_q, T_k) weights that sums to 1 when the keys'
    does not (a row fully masked sums to 0 or NaN): a softmax over the
    heads in one branch got the projections' hint (an expert's audit)."""

    def sums_to_one(dim: int, empty_ok: bool) -> bool:
        total = weights.nan_to_num(0.0).sum(dim)
        ones = (total - 1).abs() < 1e-4
        return bool((ones | (total.abs() < 1e-4) if empty_ok else ones).all())

    if sums_to_one(-1, empty_ok=True):
        return None
    for dim, axis in ((1, "heads"), (2, "queries")):
        if weights.size(dim) > 1 and sums_to_one(dim, empty_ok=False):
            return axis
    return None


#: The weights right and the output not: the formula's hint sent the
#: student back to weights that were right (an expert's audit: a second
#: F.scaled_dot_product_attention call given scale=sqrt(d_k), or the
#: mask as floats).
OUTPUT_PATH = (
    "your weights are right, so the output is computed apart from them "
    "or from them wrongly: it is weights @ v for each head, the heads "
    "merged back as (B, T, h, d_k) -> (B, T, d_model), then "
    "self.W_O(...), nothing added; "
    "if a second computation makes it (F.scaled_dot_product_attention), "
    "it must get the same scores: its scale= multiplies them "
    "(1/sqrt(d_k)) and its boolean attn_mask means True = may attend, "
    "as here (a float mask is added)"
)
#: The reverse: the output right, the weights returned not (reshaped
#: from an einsum's (B, T_q, h, T_k) layout; an expert's audit: the
#: split hint sent the student to a split that was right).
WEIGHTS_PATH = (
    "your output is right, so only the weights you return are wrong: "
    "return the very weights that multiply v (after the mask and "
    "is_causal, after the softmax), each head's as (B, h, T_q, T_k), "
    "moving axes with transpose or permute, not reshape or view"
)


#: The output right and the weights returned the softmax before the
#: mask (an expert's audit: told its layout was wrong).
UNMASKED_WEIGHTS = (
    "your output is right, but the weights you return are the softmax "
    "of the scores before any mask (mask or is_causal): return the "
    "weights that multiply v, after the masking"
)


def _transposed(got: torch.Tensor, want: torch.Tensor) -> str:
    """The weights' hint where they came back (B, h, T_k, T_q)."""
    if got.shape != want.shape or not _close(got.transpose(-2, -1), want):
        return ""
    return (
        "your output is right, and the weights you return are transposed, "
        "(B, h, T_k, T_q): return them as they multiply v, (B, h, T_q, T_k)"
    )


def _weights_path(module, inputs, got) -> str:
    """Which hint a right output with wrong weights gets."""
    try:
        unmasked = reference(module, *inputs)[1]
    except RuntimeError:  # inputs the plain formula cannot take
        return WEIGHTS_PATH
    # (The expected weights differ from these: the call masked.)
    return UNMASKED_WEIGHTS if _close(got[1], unmasked) else WEIGHTS_PATH


#: Off by a thousandth, as a softmax in float16 is (an expert's audit:
#: it got the formula's hint, for a formula that was right).
PRECISION = (
    "close, but not within float32's tolerance: a step computed in lower "
    "precision (.half(), float16 or bfloat16 inside forward), or a small "
    "change to the scores (a clamp, a cap, an eps added)? compute the "
    "exact formula in the input's dtype, float32"
)


#: How far off a correct module may be on the large inputs of milestone
#: h>1, relative to the largest value (see there).
LARGE_TOLERANCE = 1e-3


def _largest_differences(got, want) -> float:
    """The largest difference of output or weights, as a fraction of that
    tensor's largest value (at least 1)."""
    return max(
        (a.nan_to_num(0.0) - b.nan_to_num(0.0)).abs().max().item() / _scale(b)
        for a, b in zip(got, want, strict=True)
    )


def _near(got, want) -> bool:
    """Every difference under 1 % of the largest value (or 1e-2):
    rounding, not a wrong formula (float16's softmax put outputs of up
    to 17 off by 0.03 on some seeds)."""
    same = all(a.shape == b.shape for a, b in zip(got, want, strict=True))
    return same and _largest_differences(got, want) < 1e-2


def _averaged(got: torch.Tensor, want: torch.Tensor) -> bool:
    """``got`` is ``want``'s mean over the heads, spread over them (a
    hint to the split sent the student to a split that was right)."""
    mean = want.mean(1, keepdim=True).expand_as(want)  # (B, h, T_q, T_k)
    return (
        got.shape == want.shape
        and not torch.allclose(mean, want, atol=1e-5)
        and torch.allclose(got, mean, atol=1e-5)
    )


def _check_shapes(out, weights, out_shape, weights_shape) -> None:
    """Weights first: a wrong split shows there, and breaks the merge."""
    if tuple(weights.shape) != weights_shape:
        B, h, T_q, T_k = weights_shape
        causes = {
            (B, T_q * h, T_k * h): "the flat split view(B, T*h, d_k) ("
            "slides/31-trap-wrong-reshape-order-for-head-splitting.html) "
            "mixes heads and positions; use "
            "view(B, T, h, d_k).transpose(1, 2)",
            (B, T_q, h, h): "the heads attended to each other: "
            "transpose(1, 2) after view(B, T, h, d_k) puts the head axis "
            "before T",
            (B, T_q, T_k): "there is no head axis: return one row of "
            "weights per head, (B, h, T_q, T_k), even at h=1 (split to "
            "(B, h, T, d_k), and do not average the heads)",
            (B, h, T_q, T_q): "your keys have the query's length: project "
            "the key argument, self.W_K(key), and split it by key.size(1)",
        }
        if B != T_q:  # the batch and time axes swapped
            causes[(T_q, h, B, B)] = (
                "you read the input as (T, B, d_model), nn.MultiheadAttention"
                "'s default layout: here the batch comes first, (B, T, "
                "d_model); do not guess the layout from the sizes"
            )
        cause = causes.get(tuple(weights.shape), "expected (B, h, T_q, T_k)")
        if (tuple(weights.shape), tuple(out.shape)) == (
            out_shape,
            weights_shape,
        ):
            cause = "the two are swapped: return (output, weights)"
        raise Failed(
            f"weights are {tuple(weights.shape)}, expected {weights_shape}: "
            f"{cause}"
        )
    if tuple(out.shape) != out_shape:
        fix = (
            "merge the heads back with transpose(1, 2) and view(B, T_q, "
            "d_model)"
        )
        if out.dim() == 3 and out.size(0) != out_shape[0]:
            # (A batch size typed into forward was told to fix its merge:
            # a student's run.)
            fix = (
                f"its batch axis is {out.size(0)}, this call's B is "
                f"{out_shape[0]}: is a size typed into forward or kept from "
                f"an earlier call? take them from this call: B, T_q, _ = "
                f"query.shape"
            )
        elif tuple(out.shape) == tuple(n for n in out_shape if n != 1):
            # (Told to fix a merge that was right: an attacker's audit.)
            fix = (
                "an axis of size 1 is gone (a .squeeze()?): keep every "
                "axis, even when B or T_q is 1"
            )
        raise Failed(
            f"output is {tuple(out.shape)}, expected {out_shape} = "
            f"(B, T_q, d_model): {fix}"
        )


# --- the milestones ----------------------------------------------------


#: The module milestone 1 builds (its slide names it), and one it must
#: refuse: no integer d_k.
SKELETON, REFUSED = (32, 4), (10, 4)


def check_skeleton(s: Session) -> str:
    """Milestone 1: four bias-free float32 (d, d) Linears, 4·d²
    parameters, and a ``ValueError`` when h does not divide d_model."""
    d_model, h = SKELETON
    try:
        info = s.new(d_model, h)
    except StudentError as error:
        if "ValueError" not in error.kinds:
            raise
        # (The student's own words, "32 does not divide 4", were of a
        # call they never wrote: parameters in the order (num_heads,
        # d_model).)
        raise StudentError(
            f"{error}: that is d_model={d_model}, num_heads={h}, which "
            f"{h} divides, so it must build; the grader calls "
            f"MultiHeadAttention(d_model, num_heads): check the order of "
            f"__init__'s parameters, and the test that refuses a split"
        ) from None
    problem = _projection_problem(info, d_model)
    if problem:
        raise Failed(problem)
    # Two projections that multiply each other, both zero as built: each
    # one's gradient goes through the other, so training never moves
    # them (W_Q and W_K zeroed "to start uniform" stayed zero through 50
    # Adam steps: an expert's audit). One of a pair zero trains.
    for pair in (("W_Q", "W_K"), ("W_V", "W_O")):
        if all(info["projections"][name].get("zero") for name in pair):
            raise Failed(
                f"{' and '.join(pair)} are all zeros as built: each one's "
                f"gradient goes through the other, so training never "
                f"moves them ("
                + ("the attention stays uniform"
                   if pair[0] == "W_Q" else "the output stays 0")
                + "); keep nn.Linear's own initialisation"
            )  # fmt: skip
    # Every row of every projection the same (nn.init.constant_): each
    # head, and each feature in it, starts as every other and gets the
    # same gradient, so training keeps them the same (rows of W_Q and
    # the heads' weights still identical after 50 Adam steps: an
    # expert's audit).
    if all(info["projections"][n].get("rows_equal") for n in PROJECTIONS):
        raise Failed(
            "every row of W_Q, W_K, W_V and W_O is the same as built (a "
            "constant initialisation): the heads start identical and "
            "training keeps them identical; keep nn.Linear's own "
            "(random) initialisation"
        )
    if s.new(d_model, 4)["rng_after"] == info["rng_after"]:
        raise Failed(
            "two modules built one after the other leave torch's random "
            "number generator in the same state: __init__ sets it "
            "(torch.manual_seed), so every layer of a model starts with the "
            "same weights and the caller's random numbers start over; seed "
            "once, outside the module"
        )
    count = info["parameters"]
    if count != 4 * d_model**2:
        why = (
            "the module holds parameters besides W_Q, W_K, W_V, W_O"
            if count > 4 * d_model**2
            # parameters() counts a shared weight once
            else "two of W_Q, W_K, W_V, W_O are one and the same Linear: "
            "give each its own nn.Linear(d_model, d_model, bias=False)"
        )
        raise Failed(
            f"{count:,} parameters at d_model={d_model}, expected "
            f"{4 * d_model**2:,} = 4*{d_model}^2: "
            f"{why}"
        )
    bad_d, bad_h = REFUSED
    try:
        s.new(bad_d, bad_h)
    except StudentError as error:
        if "ValueError" in error.kinds:
            numbers = re.findall(r"\d+", error.said)
            if str(bad_d) not in numbers or str(bad_h) not in numbers:
                raise Failed(
                    f"MultiHeadAttention({bad_d}, {bad_h}) raised "
                    f"{error.said}: name both numbers in the message, e.g. "
                    f"'d_model ({bad_d}) must be divisible by num_heads "
                    f"({bad_h})', so whoever builds the layer sees what to "
                    f"change"
                ) from None
        elif "AssertionError" in error.kinds:
            raise Failed(
                f"MultiHeadAttention({bad_d}, {bad_h}) raised AssertionError: "
                "python -O strips asserts; raise ValueError naming d_model "
                "and num_heads"
            ) from None
        else:
            raise Failed(
                f"{error}; raise ValueError when d_model % num_heads != 0"
            ) from None
    else:
        raise Failed(
            f"MultiHeadAttention({bad_d}, {bad_h}) was accepted: {bad_h} "
            f"heads cannot share {bad_d} features; raise ValueError when "
            "d_model % num_heads != 0"
        )
    return (
        f"W_Q, W_K, W_V, W_O bias-free; {4 * d_model**2:,} = 4*{d_model}^2; "
        f"({bad_d}, {bad_h}) refused"
    )


def check_shapes(s: Session) -> str:
    """Milestone 2: ``(B, T, d_model)`` out, ``(B, h, T, T)`` weights."""
    module = s.module(2)  # a signature that cannot take three fails here
    x = s.inputs(2, 5)
    s.forward(module, (x, x, x), where="at h=2")
    return "output (2, 5, 8), weights (2, 2, 5, 5)"


def check_one_head(s: Session) -> str:
    """Milestone 3: at h=1 the module is single-head attention."""
    module = s.module(1)
    x = s.inputs(2, 5)
    got = s.forward(module, (x, x, x), where="at h=1")
    _repeats(s, module, (x, x, x), got, "at h=1")
    compare(
        module, (x, x, x), got, twin(module, x, x, x), "at h=1",
        suspects=VALUE_SUSPECTS,
        otherwise="compute softmax(q @ k.transpose(-2, -1) / sqrt(d_k)) "
        "over dim=-1, then @ v, then W_O (nn.Linear computes x @ weight.T)",
    )  # fmt: skip
    return "equals single-head attention with the same weights"


def _loop_over_heads(s: Session) -> str:
    """A build rule of the project
    (slides/43-project-multiheadattention-as-nn-module.html): the heads
    are an axis that one batched matmul runs, not a Python loop. A loop
    computes the right values (a student's ``for i in range(self.h)``
    passed 7 of 7 and was told nothing), so it is named, not failed: its
    calls grow with h, one or more for each of the 6 heads that h=8 adds
    to h=2. Returns the note for the milestone's line ("" for none)."""
    x = s.inputs(2, 5)
    calls = {}
    for h in (2, 8):
        s.forward(s.module(h), (x, x, x), where=f"at h={h}")
        calls[h] = s.calls
    if calls[8] - calls[2] < 8 - 2:
        return ""
    return (
        f"; but forward makes {calls[2]} calls at h=2 and {calls[8]} at h=8: "
        f"a Python loop over the heads? The project's rule: keep the heads "
        f"as an axis, (B, h, T, d_k), and let one batched matmul run them"
    )


def check_many_heads(s: Session) -> str:
    """Values at h>1 against ``nn.MultiheadAttention`` (the check that
    sees a wrong head split, merge or scale), two eval calls that agree,
    and one backward pass in train mode against torch's gradients."""
    at_one = (
        "values differ at h=1 too: fix milestone h=1 first"
        if "h=1" not in s.passed
        else "values differ at h>1 but match at h=1: check the order of "
        "view and transpose when splitting heads, the merge, the scale "
        "1/sqrt(d_k), and that W_O takes the merged (B, T, d_model) whole"
    )
    # Another batch size and width at h=4: a size typed into forward
    # (view(2, ...), view(..., 8)) passes every call of one shape; T = h
    # there, where a merge that tells the axes apart by their size (skip
    # the transpose when x.size(2) == h) goes wrong; and B > T, where a
    # forward that guesses nn.MultiheadAttention's (T, B, d) layout from
    # the sizes (size(0) > size(1)) does.
    built = []  # (module, input, where), in the order built
    for h, B, T, d_model in ((2, 2, 5, D_MODEL), (4, 5, 4, 12)):
        module = s.module(h, d_model)
        x = s.inputs(B, T, d_model)
        built.append((module, x, f"at h={h}"))
        where = f"at h={h}" + (
            f", B={B}, T={T}, d_model={d_model}" if h > 2 else ""
        )
        got = _forward_hinted(
            s, module, (x, x, x), where,
            h > 2 and "at B=2, T=5, d_model=8 it ran; is a size typed "
            "into forward? take them from the call: B, T, d_model = "
            "query.shape",
        )  # fmt: skip
        _repeats(s, module, (x, x, x), got, where)
        compare(
            module, (x, x, x), got, twin(module, x, x, x), where,
            suspects=VALUE_SUSPECTS, otherwise=at_one,
        )  # fmt: skip
        _fresh(s, module, where, x.shape)
    _together(s, *built)
    _reweighted(s, module, x, where)
    loop = _loop_over_heads(s)
    module = s.module(2)
    # A long sequence: a forward that works through the queries or the
    # keys in blocks of 8 (a softmax per key block, never rescaled) was
    # exact up to T = 8, and every call above is shorter (an expert's
    # audit).
    x = s.inputs(2, LONG_T)
    where = f"at h=2 on a long sequence (T={LONG_T})"
    got = s.forward(module, (x, x, x), where=where)
    compare(
        module, (x, x, x), got, twin(module, x, x, x), where,
        suspects=VALUE_SUSPECTS, otherwise=LONG_HINT,
    )  # fmt: skip
    _large(s, module, s.inputs(2, 5), "at h=2")
    x = s.inputs(2, 5)
    grads = (torch.randn(2, 5, D_MODEL, generator=s.gen),
             torch.randn(2, 2, 5, 5, generator=s.gen))  # fmt: skip
    got, got_grads = s.forward(
        module, (x, x, x), where="at h=2 in train mode", train=True,
        grads=grads,
    )  # fmt: skip
    want, want_grads = twin(module, x, x, x, grads=grads)
    compare(
        module, (x, x, x), got, want, "at h=2 in train mode",
        because="in train mode too the module computes exactly what it "
        "computes in eval mode, as it did in the calls before (the "
        "lesson's module has no dropout: take any nn.Dropout out)",
    )  # fmt: skip
    _same_gradients(
        got_grads, want_grads, "after one backward pass in train mode",
        "do not .detach() the attention weights (the softmax) you return "
        "or use, and do not change them in place (softmax_, exp_, /=): "
        "use torch.softmax(scores, dim=-1)",
    )  # fmt: skip
    # Eval mode with gradients on, as model.eval() alone leaves them, and
    # a backward pass: a forward that turned them off for inference (a
    # bare torch.set_grad_enabled(False) left the caller's autograd off;
    # no_grad, inference_mode or .detach() when not self.training cut the
    # graph a caller's eval-mode backward needs: saliency, a frozen
    # layer). The same values and gradients as in train mode: the
    # lesson's module has no dropout. mask=None and is_causal=False are
    # passed by name: a default of None tested with `is not None` took
    # an explicit False for True.
    where = "at h=2 in eval mode with gradients on"
    named = {
        name: default
        for name, default in (("mask", None), ("is_causal", False))
        if {name, "**"} & set(module.forward_parameters)
    }
    got, got_grads = s.forward(
        module, (x, x, x), where=where, grads=grads, **named
    )
    passed = ", ".join(f"{k}={v}" for k, v in named.items())
    compare(
        module, (x, x, x), got, want, f"{where} ({passed or 'no mask'})",
        because=f"passed by name, {passed} mean what leaving them out "
        f"means (no mask, not causal): test `if mask is not None` and `if "
        f"is_causal`" if named else "",
    )  # fmt: skip
    _same_gradients(
        got_grads, want_grads, "after a backward pass in eval mode",
        "model.eval() leaves gradients on: forward must not turn them off "
        "(torch.no_grad(), inference_mode, set_grad_enabled(self.training)) "
        "or .detach() the weights when not training; the caller chooses "
        "(with torch.no_grad():)",
    )  # fmt: skip
    _keeps_more(s, module, x)
    _sweep(s, SWEEP_HEADS)  # (always runs in h>1: the line names its sizes)
    return (
        "outputs and per-head weights equal nn.MultiheadAttention, h=1 to "
        f"8, B=1 to 6, T=1 to {LONG_T}, large inputs too; eval repeats; "
        "gradients match" + loop + _in_float64(s, module, x)
    )


#: The longest sequence, called once per milestone that computes values.
#: Past 128: a softmax per block of 64 keys (a flash-style tile size)
#: was exact at T = 40, the length used before (an expert's audit,
#: round 10).
LONG_T = 130
#: Causal calls stay within a fixed context: a causal mask registered as
#: a buffer of a maximum length (nanoGPT's block_size, 64 in the tests)
#: is correct up to it.
CAUSAL_LONG_T = 40
LONG_HINT = (
    "right on the shorter sequences, wrong on this one: does forward work "
    "through the queries or keys in blocks? every query's softmax runs "
    "over all of its keys at once (a running sum must be rescaled when "
    "the max changes), and a block of queries keeps its causal offset"
)


def _finite(got) -> bool:
    """Output and weights hold no inf or NaN."""
    return all(bool(value.isfinite().all()) for value in got)


def _large(s: Session, module, x, where: str, mask=None, is_causal=False):
    """Scores in the hundreds, as trained weights and long inputs make
    (the inputs ``x`` * 20): an exp() without the row's max taken out
    first overflows to inf and NaN; torch.softmax does not. The values
    are then compared within LARGE_TOLERANCE, not ATOL: at this size
    float32's own rounding of a score moves a weight by up to 9.5e-6
    (400 seeds of the reference against float64; a correct module failed
    ATOL on some), where scores clamped to +-50 "against overflow" were
    off by 0.5 or more on every one of 50 seeds.

    With a ``mask`` the blocked keys must leave the softmax before it
    runs: a softmax over every key, then the blocked ones zeroed and the
    rest renormalised, was NaN (0/0) once a blocked key held the row's
    largest score by more than float32 holds; a fill of -100 instead of
    -inf left the blocked keys most of the weight. ``is_causal`` the
    same: the future zeroed after the softmax."""
    x = x * 20
    where = f"{where} on large inputs (x * 20: scores in the hundreds)"
    call = {} if mask is None else {"mask": mask}
    if is_causal:
        call["is_causal"] = True
        future = causal(x.size(1), x.size(1))
        mask = future if mask is None else mask & future
    got = s.forward(module, (x, x, x), where=where, **call)
    broken = [
        name
        for name, value in zip(("output", "weights"), got, strict=True)
        if not value.isfinite().all()
    ]
    if (
        broken
        and mask is not None
        and _finite(
            s.forward(module, (x, x, x), where=f"{where}, without a mask")
        )
    ):
        # Unmasked the same call is finite: the mask is the cause (a
        # global max, NaN with or without it, got this hint: an expert's
        # audit).
        raise Failed(
            f"{' and '.join(broken)} {where} hold inf or NaN: the softmax "
            f"must see the allowed keys only: taken over every key first "
            f"(then masked and renormalised), it underflows to 0/0 where a "
            f"blocked key has the row's largest score; fill the blocked "
            f"scores first: scores.masked_fill(~allowed, float('-inf')), "
            f"then torch.softmax(scores, dim=-1)"
        )
    if broken:
        raise Failed(
            f"{' and '.join(broken)} {where} hold inf or NaN: the softmax "
            f"is unstable: exp() of large scores overflows; subtract each "
            f"row's max first, or use torch.softmax(scores, dim=-1)"
        )
    off = _largest_differences(got, twin(module, x, x, x, mask))
    if off <= LARGE_TOLERANCE:
        return
    # Wrong on a new input of a shape seen before at any scale (K and V
    # cached by data_ptr: x * 20 sits in x's storage) is named as such,
    # not as clamped scores.
    _fresh(s, module, f"at h={module.h}", x.shape)
    blocked = None if mask is None else ~mask.expand_as(got[1])
    if blocked is not None and blocked.any():
        leak = got[1][blocked].abs().max().item()  # weights (B, h, T, T)
        if leak > ATOL:
            raise Failed(
                f"blocked keys get weight (up to {leak:.3g}) {where}: a "
                f"finite fill (-100, say) is not far enough below scores "
                f"this large: fill them with float('-inf') "
                f"(scores.masked_fill(~mask, float('-inf')))"
            )
    raise Failed(
        f"output or weights {where} are off by up to {off:.3g} (of the "
        f"largest value): large scores must give the exact softmax: do not "
        f"clamp or rescale the scores, take only each row's max out "
        f"(torch.softmax(scores, dim=-1) does)"
    )


#: A gradient's tolerance, of its largest value (at least 1): gradients
#: of 14 to 23 from a correct float32 module (its weights as exp(s -
#: logsumexp(s))) were 1.35e-4 off the exact ones on 15 of 750 calls,
#: and were told the graph was cut (an expert's audit); a cut graph
#: gives none, or zeros.
GRADIENT_ATOL = 1e-4


def _same_gradients(got: dict, want: dict, when: str, fix: str) -> None:
    """The four weights' gradients equal ``nn.MultiheadAttention``'s
    (None: the student's graph gave that weight none), then those of
    query, key and value: a forward that detached its inputs (``clone()
    .detach()``, to leave the caller's tensors alone) passed every value
    and weight gradient while no gradient reached the layers before it
    (an expert's audit)."""

    def wrong(names):
        return [
            name
            for name in names
            if got.get(name) is None
            or not torch.allclose(
                got[name], want[name], atol=GRADIENT_ATOL * _scale(want[name])
            )
        ]

    weights, inputs = wrong(PROJECTIONS), wrong(ARGUMENTS[:3])
    if inputs and not weights:
        raise Failed(
            f"{when} the gradients of the inputs ({', '.join(inputs)}) "
            f"differ from nn.MultiheadAttention's, the weights' are "
            f"right: forward cuts its inputs from the graph, so no "
            f"gradient reaches the layers before attention; do not "
            f".detach() (or clone().detach()) query, key or value"
        )
    if weights:
        none = [name for name in weights if got[name] is None]
        if none and len(none) < len(PROJECTIONS):
            # Some layers' weights, not all: a step of the scores under
            # no_grad, or a weight cut by itself (.data, .detach(): a
            # student's F.linear(q, self.W_Q.weight.data) was told only
            # of the softmax).
            fix += (
                "; a weight with none at all may be cut by itself: use "
                "each layer's weight as it is (self.W_Q(query), or "
                "F.linear(query, self.W_Q.weight)), never its .data or "
                ".detach()"
            )
        raise Failed(
            f"{when} the gradients of {', '.join(weights)} differ from "
            f"nn.MultiheadAttention's"
            + (f" ({', '.join(none)}: none at all)" if none else "")
            + f": the values are right, so the graph is cut: {fix}"
        )


def _forward_hinted(s: Session, module, args, where, hint, **kwargs):
    """``s.forward``; an error the student's code raised there gets
    ``hint`` (what the call tries that the earlier ones did not)."""
    try:
        return s.forward(module, args, where=where, **kwargs)
    except StudentError as error:
        if not hint:
            raise
        raise StudentError(f"{error}: {hint}") from None


def _repeats(s: Session, module, inputs, got, where: str) -> None:
    """A second call in eval mode on the same input gives the same
    result: checked before any value, since a random result matches
    nothing."""
    again = s.forward(module, inputs, where=f"{where}, called again")
    if _differences(again, got):
        raise Failed(
            f"two calls in eval mode {where} on the same input gave "
            f"different results: nothing random may run in eval mode "
            f"(dropout only when self.training)"
        )


def _numbers_held(held) -> dict[str, int]:
    """The child's ``held`` (attribute -> numbers), as data: anything
    but str -> int is left out (the reply is the child's)."""
    if not isinstance(held, dict):
        return {}
    return {k: v for k, v in held.items() if type(v) is int}


def _keeps_more(s: Session, module, x) -> None:
    """The same call twice, in eval mode, then in train mode (maps kept
    in training only): what the module holds outside its parameters
    must not grow with the second (a cache made on the first call of a
    shape is made once). Attention maps appended to a list on self each
    call, detached, passed 7 of 7: a training run keeps one (B, h, T, T)
    map a step, 256 MB a step at B=32, h=8, T=512, until memory runs
    out."""
    for train in (False, True):
        where = "at h=2, the same call twice" + (
            " in train mode" if train else ""
        )
        call = dict(where=where, train=train, held=True)
        s.forward(module, (x, x, x), **call)
        before = _numbers_held(s.held)
        s.forward(module, (x, x, x), **call)
        after = _numbers_held(s.held)
        if grown := [k for k, n in after.items() if n > before.get(k, 0)]:
            name = _names(grown)[0]
            raise Failed(
                f"{name} grew from {before.get(name, 0):,} to "
                f"{after[name]:,} numbers {where}: forward keeps something "
                f"of each call (attention maps appended for plotting?), so "
                f"memory grows every training step until it runs out; keep "
                f"the last call's alone (self.attn = weights), or nothing"
            )


def _fresh(s: Session, module, where: str, shape) -> None:
    """The same module on a new input of the same shape: right for the
    first input, wrong for the next is state kept from an earlier call
    (a key cached on ``self``), which a later milestone would otherwise
    be blamed for."""
    y = s.inputs(*shape)  # (B, T, d_model), as the first input
    where = f"{where} on a second input"
    got = s.forward(module, (y, y, y), where=where)
    want = twin(module, y, y, y)
    differ = _differences(got, want)
    if differ:
        # State only if the same numbers in another batch (another shape,
        # so nothing kept for this one applies) come out right: a clamp at
        # +-15 was wrong on some inputs and not others, and was told it
        # kept state (an expert's audit).
        y2 = torch.cat([y, y])  # (2B, T, d_model)
        want = twin(module, y2, y2, y2)
        try:
            again = s.forward(module, (y2, y2, y2), where=f"{where}, twice")
        except StudentError:  # a key kept from a batch of B: its shape
            again = want
        compare(
            module, (y2, y2, y2), again, want, where,
            suspects=VALUE_SUSPECTS,
            otherwise="right on one input, wrong on another: does a step "
            "depend on the numbers (a clamp, a cap, a threshold, an eps)? "
            "compute the exact formula",
        )  # fmt: skip
        raise Failed(
            f"{' and '.join(differ)} {where}, though the first input's "
            f"matched (and this one does, twice in a batch): "
            f"{FROM_BEFORE} (a key or mask saved on self); compute "
            f"everything from this call's arguments"
        )


TOGETHER = "called after another was built"


def _together(s: Session, first, later) -> None:
    """The module built first, called again once a second one (another
    h and d_model) exists, as an encoder's and a decoder's do: a size
    kept on the class (``MultiHeadAttention.h = h``) or in a module-level
    variable is the last one built's, and every call before used the
    module built last (an expert's review: it passed 7 of 7)."""
    (module, x, where), later_where = first, later[2]
    where = f"{where}, {TOGETHER} {later_where}"
    hint = (
        "is a size kept on the class or in a module-level variable? "
        "each module keeps its own on self (self.h = h)"
    )
    got = _forward_hinted(s, module, (x, x, x), where, hint)
    differ = _differences(got, twin(module, x, x, x))
    if differ:
        raise Failed(f"{' and '.join(differ)} {where}: {hint}")


def _reweighted(s: Session, module, x, where: str) -> None:
    """New weights copied into the same module, in place, as an
    optimiser's step or ``load_state_dict`` does: the next call computes
    with them. A fused copy of W_Q, W_K, W_V made on the first call (and
    made again only when the weights' data_ptr changed) passed every
    call of the same weights (an expert's audit)."""
    module.weights = s.weights(x.size(-1))
    s.child.request(
        "set", "copying new weights into W_Q, W_K, W_V, W_O",
        id=module.id, weights=module.weights,
    )  # fmt: skip
    where = f"{where} after new weights were copied into W_Q..W_O"
    got = s.forward(module, (x, x, x), where=where)
    differ = _differences(got, twin(module, x, x, x))
    if differ:
        raise Failed(
            f"{' and '.join(differ)} {where} (as an optimiser's step or "
            f"load_state_dict does, in place): forward computed with the "
            f"old ones, kept in a copy (fused, transposed) made once; use "
            f"self.W_Q, self.W_K, self.W_V, self.W_O in every call"
        )


def _plain_first(s: Session, module, inputs, where, without) -> tuple:
    """The call without the feature under test, compared first: a mask's
    hint means nothing while the plain values are wrong."""
    got = s.forward(module, inputs, where=where)
    differ = _differences(got, twin(module, *inputs))
    if differ and "h>1" not in s.passed:
        raise Failed(
            f"{' and '.join(differ)} {where} {without}: the values are "
            f"wrong before any mask; fix milestone h>1 first"
        )
    if differ:
        raise Failed(
            f"{' and '.join(differ)} {where} {without}, though h>1 "
            f"passed: does forward keep something from an earlier call?"
        )
    return got


PADDING = "padding mask (B, 1, 1, T_k), lengths 3 and 5"
IGNORES_MASK = (
    "your forward ignores mask: apply it to the scores before the softmax "
    "(masked_fill returns a new tensor: scores = scores.masked_fill(~mask, "
    "float('-inf')))"
)


def _with_mask(s: Session, module, inputs, allowed, where, **hints) -> None:
    """One call with ``mask=allowed``, compared (``hints``: compare's
    suspects and otherwise)."""
    got = s.forward(module, inputs, where=where, mask=allowed)
    want = twin(module, *inputs, allowed)
    compare(module, inputs, got, want, where, **hints)


def _finite_fill(got, allowed, where: str) -> None:
    """Blocked keys that keep a sliver of weight: a finite fill (-10,
    -100) instead of -inf; its numbers are close, and were named as
    lower precision (an expert's audit). A fill of -1e4 and below gives
    exactly 0 in float32 and passes."""
    weights = got[1]  # (B, h, T_q, T_k)
    blocked = ~allowed.expand_as(weights)
    if not blocked.any():
        return
    leak = weights.nan_to_num(0.0)[blocked].abs().max().item()
    if ATOL < leak < 1e-2:
        raise Failed(
            f"blocked keys still get weight (up to {leak:.3g}) {where}: "
            f"fill them with float('-inf'), not a finite number (exp(-10) "
            f"is not 0): scores.masked_fill(~mask, float('-inf'))"
        )


def _masked_gradients(s: Session, module, x, allowed, where, **call) -> None:
    """One backward pass in train mode under a mask (``call``: ``mask=``
    or ``is_causal=True``; ``allowed``: what it allows): the four
    weights' gradients equal nn.MultiheadAttention's. A mask helper
    under @torch.no_grad() gave W_Q and W_K none, every value right."""
    grads = (torch.randn(2, 5, D_MODEL, generator=s.gen),
             torch.randn(2, 2, 5, 5, generator=s.gen))  # fmt: skip
    where = f"{where} in train mode"
    got, got_grads = s.forward(
        module, (x, x, x), where=where, train=True, grads=grads, **call
    )  # fmt: skip
    want, want_grads = twin(module, x, x, x, allowed, grads=grads)
    compare(module, (x, x, x), got, want, where)
    _same_gradients(
        got_grads, want_grads, f"after one backward pass {where}",
        "masking must stay in the graph: no torch.no_grad() or .detach() "
        "around the scores or the mask step",
    )  # fmt: skip


def check_masks(s: Session) -> str:
    """Masks via ``mask=``: padding (B, 1, 1, T_k), right and left,
    causal (T, T), a decoder's (B, 1, T, T) and one per head (B, h, T,
    T), at B = 1 to 4, on large inputs too, with gradients."""
    module = s.module(2)
    _require(module, "mask")
    x = s.inputs(2, 5)
    _plain_first(s, module, (x, x, x), "at h=2", "without a mask")
    # The shorter sequence first: its row, used for the whole batch
    # (mask[0]), is not the same as no mask.
    masks = {
        PADDING: padding([3, 5], 5),
        "causal mask (T, T)": causal(5, 5),
    }
    earlier = None  # the mask of the call before
    for what, allowed in masks.items():
        where = f"with a {what}"
        try:
            got = s.forward(module, (x, x, x), where=where, mask=allowed)
        except StudentError as error:
            if not error.kinds:  # no exception: the process ended
                raise
            # The same call ran without it (_plain_first): a mask given an
            # axis more (the Annotated Transformer's unsqueeze(1)) made the
            # scores 5-D, and the merge's view raised (an expert's audit).
            # (Not the hint torch's words get elsewhere: the view "an
            # axis short" where the mask made it one more; and what the
            # words name, where they name it: an expert's review.)
            said = str(error).removesuffix(_lesson_hint(error.said))
            if "Boolean value of Tensor" in error.said:
                how = (
                    "`if mask:` asks a whole tensor for one True or False: "
                    "test `if mask is not None`"
                )
            elif "bool tensor is not supported" in error.said:
                how = "it is boolean, True = may attend: invert it with ~mask"
            else:
                how = (
                    "it broadcasts over the scores (B, h, T_q, T_k) as given "
                    "(unsqueeze nothing: an axis more makes the scores 5-D)"
                )
            raise StudentError(
                f"{said}: without the mask this call runs, so the cause is "
                f"how forward uses the mask, {tuple(allowed.shape)}: {how}"
            ) from None
        suspects = [(IGNORES_MASK, {})]
        if earlier is not None:
            suspects.append((
                "forward used the mask of its earlier call (kept on "
                "self?): use the mask of this call", {"allowed": earlier},
            ))  # fmt: skip
        if allowed.dim() == 4:  # (B, 1, 1, T_k): a row per sequence
            suspects.append((
                "the first sequence's mask is used for the whole batch: "
                "mask is (B, 1, 1, T_k), one row per sequence; use it "
                "whole, without indexing it", {"allowed": allowed[:1]},
            ))  # fmt: skip
            # Scores as (B*h, T_q, T_k), row b*h + i for head i of
            # sequence b; mask.repeat(h, 1, 1) gives it mask[(b*h + i) % B].
            B, h, T_k = allowed.size(0), module.h, allowed.size(-1)
            rows = torch.arange(B * h) % B
            suspects.append((
                "head i of each sequence got sequence i's mask: the "
                "mask's batch axis must meet the scores' batch axis, not "
                "the head axis (mask (B, 1, 1, T_k) over scores (B, h, "
                "T_q, T_k); with scores as (B*h, T_q, T_k), "
                "repeat_interleave(h, dim=0), not repeat(h, 1, 1))",
                {"allowed": allowed[rows].view(B, h, 1, T_k)},
            ))  # fmt: skip
        suspects.append((
            "you read mask True as blocked (nn.MultiheadAttention's "
            "convention); here True = may attend: "
            "scores.masked_fill(~mask, float('-inf'))", {"allowed": ~allowed},
        ))  # fmt: skip
        _finite_fill(got, allowed, where)
        compare(
            module, (x, x, x), got, twin(module, x, x, x, allowed),
            f"with a {what}", suspects=suspects,
            otherwise="block a key where mask is False: "
            "scores.masked_fill(~mask, float('-inf')) before the softmax",
        )  # fmt: skip
        earlier = allowed
    # Three sequences at h = 2: a mask laid out for B == h (expanded as
    # (h, B, ...)) ran, and matched, at B = h = 2 and B = 1 only. Mostly
    # padding (6 keys of 15): a forward that guessed the convention from
    # how much of the mask is True (inverted under half) passed.
    x3, allowed = s.inputs(3, 5), padding([1, 3, 2], 5)
    what = "three sequences (B = 3, h = 2) and their padding mask"
    try:
        got = s.forward(
            module, (x3, x3, x3), where=f"with {what}", mask=allowed
        )
    except StudentError as error:
        if not error.kinds:  # no exception: the process ended
            raise
        # The mask's hint only if the call runs without it (a batch size
        # kept from the first call raised here too, and was named a mask
        # problem: an expert's audit).
        try:
            s.forward(module, (x3, x3, x3), where="with B = 3 and no mask")
        except StudentError as plain:
            raise StudentError(
                f"{plain}: at B = 2 it ran, so a size is kept from an "
                f"earlier call or typed in: take B, T from this call (B, "
                f"T, _ = query.shape)"
            ) from None
        raise StudentError(
            f"{error}: at B = h = 2 it ran: the mask's batch axis is B, "
            f"whatever h is"
        ) from None
    compare(
        module, (x3, x3, x3), got, twin(module, x3, x3, x3, allowed),
        f"with {what}", suspects=[(IGNORES_MASK, {}), (
            "your forward inverted this mask, which is mostly False: "
            "True = may attend however much of the mask is True; never "
            "guess the convention from the mask's values",
            {"allowed": ~allowed},
        )],
        otherwise="each sequence gets its own row of the mask, whatever "
        "h is: mask (B, 1, 1, T_k) broadcasts over (B, h, T_q, T_k); "
        "with scores as (B*h, T_q, T_k), mask.repeat_interleave(h, dim=0)",
    )  # fmt: skip
    # Gradients through the masked path (a mask helper under
    # @torch.no_grad() gave W_Q and W_K none, with every value right),
    # once h>1 found them right without a mask: a difference is then
    # the mask's.
    if "h>1" in s.passed:
        _masked_gradients(
            s, module, x, masks[PADDING], "with a padding mask",
            mask=masks[PADDING],
        )  # fmt: skip
    # A (T, T) mask where T = B: a forward that read a 2-D mask whose
    # first size is B as (B, T_k) padding passed at B = 2, T = 5.
    x4 = s.inputs(4, 4)
    _with_mask(
        s, module, (x4, x4, x4), causal(4, 4),
        "with a causal mask (T, T) at B = T = 4",
        suspects=[(IGNORES_MASK, {})],
        otherwise="a 2-D mask is (T_q, T_k), whatever B is: tell a mask's "
        "axes by its number of dimensions, never by comparing sizes "
        "with B",
    )  # fmt: skip
    # One sequence, as at inference: a mask squeezed to find its rows
    # lost its batch axis there (mask.squeeze() of (1, 1, 1, T_k)).
    one = x[:1]
    _with_mask(
        s, module, (one, one, one), padding([3], 5),
        "with one sequence (B = 1) and its padding mask (1, 1, 1, T_k)",
        suspects=[(IGNORES_MASK, {})],
        otherwise="keep the batch axis of the mask, even of length 1: "
        "use it whole, without squeeze()",
    )  # fmt: skip
    # A decoder's mask (B, 1, T, T), padding and causal in one: a forward
    # that read every 4-D mask as padding (its last row) passed.
    allowed = masks[PADDING] & masks["causal mask (T, T)"]
    _with_mask(
        s, module, (x, x, x), allowed,
        "with a padding and causal mask (B, 1, T, T)",
        suspects=[(IGNORES_MASK, {}), (
            "your forward reads a 4-D mask as padding, one row per "
            "sequence: a (B, 1, T_q, T_k) mask has a row per query; use "
            "it whole (it broadcasts over the heads)",
            {"allowed": allowed[..., -1:, :]},
        )],
        otherwise="use the mask whole, whatever its shape: it broadcasts "
        "against the scores (B, h, T_q, T_k)",
    )  # fmt: skip
    # Padding on the left (as a batch is padded for generation): every
    # mask above allows a prefix of the keys, and a forward that read
    # each row as a length (mask.sum(-1)) passed them all.
    # Of other lengths than the padding mask's, so that reading them as
    # lengths and reusing that earlier mask (a cache keyed on the mask's
    # data_ptr: same shape, same storage) give different numbers.
    allowed = padding([2, 4], 5).flip(-1)  # (B, 1, 1, T_k)
    as_lengths = padding(allowed.sum(-1).flatten().tolist(), 5)
    _with_mask(
        s, module, (x, x, x), allowed,
        "with a left-padding mask (B, 1, 1, T_k): the first keys blocked",
        suspects=[(IGNORES_MASK, {}), (
            "your forward reads each row of the mask as a length and "
            "allows that many first keys: block exactly the keys where "
            "mask is False, wherever they are",
            {"allowed": as_lengths},
        ), (
            "forward used the mask of an earlier call of this shape (kept "
            "on self, or found again by its data_ptr()): use the mask of "
            "this call", {"allowed": masks[PADDING]},
        )],
        otherwise="block exactly the keys where mask is False, wherever "
        "they are: scores.masked_fill(~mask, float('-inf'))",
    )  # fmt: skip
    # A mask per head (B, h, T, T), as mha_ref takes: head 0 sees the
    # past, head 1 the future. A loop over heads that gave each head
    # mask[:, 0] passed every mask above (an expert's audit).
    past = causal(5, 5)
    allowed = torch.stack([past, past.T]).expand(2, 2, 5, 5)  # (B, h, T, T)
    _with_mask(
        s, module, (x, x, x), allowed,
        "with a mask per head (B, h, T, T)",
        suspects=[(IGNORES_MASK, {}), (
            "every head got head 0's mask: a (B, h, T_q, T_k) mask has a "
            "mask per head; use it whole (mask[:, i] for head i in a loop)",
            {"allowed": allowed[:, :1]},
        )],
        otherwise="use the mask whole, whatever its shape: it broadcasts "
        "against the scores (B, h, T_q, T_k)",
    )  # fmt: skip
    # Mostly padding (lengths 1 and 2): most rows' largest score is a
    # blocked key's, which a softmax that takes the max before masking
    # subtracts (30 seeds: 29 caught with lengths 3 and 5).
    _large(
        s, module, x, "with a padding mask (lengths 1 and 2)",
        mask=padding([1, 2], 5),
    )  # fmt: skip
    # Gradients under a mask with a row per query: weights zeroed in
    # place (masked_fill_) for such masks only broke backward (an
    # expert's audit), and the padding mask above has one row.
    if "h>1" in s.passed:
        _masked_gradients(
            s, module, x, causal(5, 5), "with a causal mask (T, T)",
            mask=causal(5, 5),
        )  # fmt: skip
    return (
        "padding (left too), causal, (B, 1, T, T) and per-head masks (True "
        "= may attend) match torch at B = 1 to 4, large inputs too"
        + (", gradients too" if "h>1" in s.passed else "")
        + _sweep(s, SWEEP_MASKS)
    )


# --- the sweeps: each feature over the sizes and layouts the fixed calls
# leave out ------------------------------------------------------------

#: One sweep call: h, d_model, B, T_q, T_k, the inputs, the mask's kind
#: (None: no mask) and is_causal. The inputs: "x" one tensor as query,
#: key and value; "x, x, y" the value another; "q, k, v" three; "q, kv,
#: kv" key is value; "x transposed" a non-contiguous view.
#:
#: Why: each fixed call above was added for one bug an expert wrote, and
#: the next expert's bugs were paths no fixed call took: h = 1 without
#: masking, B = 1 without is_causal, key is value without the mask, a
#: 2-D mask dropping is_causal, batches over 4 cut in chunks, the mask
#: passed by position and dropped by a decorator, a view() that needs a
#: contiguous input (13 such modules passed 7 of 7). A sweep crosses
#: the features with those sizes, and names the call that differs.
Sweep = tuple[int, int, int, int, int, str, str | None, bool]

SWEEP_HEADS: tuple[Sweep, ...] = (
    (8, 8, 2, 3, 3, "x", None, False),  # d_k = 1
    (3, 6, 1, 1, 1, "x", None, False),  # h = 3, one token
    (4, 12, 3, 9, 9, "x transposed", None, False),
    (2, 8, 6, 2, 2, "x transposed", None, False),
)
SWEEP_MASKS: tuple[Sweep, ...] = (
    (1, 8, 2, 5, 5, "x", "padding", False),
    (1, 8, 1, 6, 6, "x", "(T_q, T_k)", False),
    (4, 12, 6, 3, 3, "x", "padding", False),
    (3, 6, 5, 9, 9, "x", "(B, 1, T_q, T_k)", False),
    (8, 8, 1, 1, 1, "x", "(B, 1, 1, T_k)", False),
    (2, 8, 3, 19, 19, "x", "(B, 1, T_q, T_k)", False),
    (2, 8, 2, 13, 13, "x transposed", "(T_q, T_k)", False),
    (2, 8, 4, 9, 9, "x", "left padding", False),
)
SWEEP_CAUSAL: tuple[Sweep, ...] = (
    (1, 8, 2, 5, 5, "x", None, True),
    (1, 8, 2, 6, 6, "x", "padding", True),
    (2, 8, 1, 6, 6, "x", None, True),
    (2, 8, 1, 5, 5, "x", "(T_q, T_k)", True),
    (4, 12, 3, 12, 12, "x", "(B, 1, T_q, T_k)", True),
    (3, 6, 5, 9, 9, "x transposed", "(T_q, T_k)", True),
    (2, 8, 6, 19, 19, "x", "padding", True),
    (8, 8, 2, 1, 1, "x", None, True),
)
SWEEP_CROSS: tuple[Sweep, ...] = (
    (1, 8, 2, 3, 7, "q, k, v", None, False),
    (2, 8, 2, 5, 5, "x, x, y", None, False),
    (2, 8, 2, 3, 7, "q, kv, kv", "padding", False),
    (1, 8, 1, 4, 9, "q, kv, kv", "(T_q, T_k)", True),
    (4, 12, 3, 1, 6, "q, k, v", "(B, 1, 1, T_k)", True),
    (3, 6, 5, 9, 2, "q, k, v", "(B, 1, T_q, T_k)", False),
    (2, 8, 1, 13, 19, "q, kv, kv", None, True),
    (8, 8, 2, 6, 1, "q, k, v", None, False),
    (2, 8, 3, 4, 11, "q, k, v transposed", "padding", True),
)
SWEEP_HINT = (
    "the calls above matched and this one does not: does forward take "
    "another path for some sizes or arguments (h = 1, B = 1, one token, a "
    "long sequence, key is value, a 2-D mask, arguments by position, a "
    "non-contiguous input)? every path must project, scale, mask and "
    "merge alike; take every size from this call's tensors"
)


def _sweep_inputs(s: Session, kind: str, B, T_q, T_k, d_model) -> list:
    """query, key, value for one sweep call (each (B, T, d_model))."""
    if kind.endswith("transposed"):  # (B, T, d_model) views, not contiguous

        def view(T):
            return torch.randn(T, B, d_model, generator=s.gen).transpose(0, 1)

        if kind == "x transposed":
            return [view(T_q)] * 3
        return [view(T_q), view(T_k), view(T_k)]  # "q, k, v transposed"
    q = s.inputs(B, T_q, d_model)
    if kind == "x":
        return [q, q, q]
    if kind == "x, x, y":
        return [q, q, s.inputs(B, T_q, d_model)]
    kv = s.inputs(B, T_k, d_model)
    if kind == "q, kv, kv":
        return [q, kv, kv]
    return [q, kv, s.inputs(B, T_k, d_model)]  # "q, k, v"


def _sweep_mask(s: Session, kind: str, B, T_q, T_k) -> torch.Tensor:
    """A mask of one kind, True = may attend; never a row with no key
    (key 0 is allowed in every row, so is_causal leaves one too)."""
    if kind in ("padding", "left padding"):
        lengths = torch.randint(1, T_k + 1, (B,), generator=s.gen).tolist()
        rows = padding(lengths, T_k)  # (B, 1, 1, T_k)
        return rows.flip(-1) if kind == "left padding" else rows
    shape = {
        "(T_q, T_k)": (T_q, T_k),
        "(B, 1, 1, T_k)": (B, 1, 1, T_k),
        "(B, 1, T_q, T_k)": (B, 1, T_q, T_k),
    }[kind]
    allowed = torch.rand(shape, generator=s.gen) < 0.6
    allowed[..., 0] = True
    return allowed


def _sweep(s: Session, calls: tuple[Sweep, ...]) -> str:
    """Each call against nn.MultiheadAttention; every other one passes
    mask and is_causal by position, where the signature takes them so.
    A mask or is_causal the milestones before have not passed is left
    out (a mask's fault is that milestone's to name), and the whole
    sweep while h>1 has not passed: its sizes would fail for the fault
    h>1 named, a second time with less to say."""
    if s.current != "h>1" and "h>1" not in s.passed:
        return " (other sizes are tried once h>1 passes)"
    for n, (h, d_model, B, T_q, T_k, inputs, kind, is_causal) in enumerate(
        calls
    ):
        kind = kind if "masks" in s.passed or s.current == "masks" else None
        is_causal = is_causal and (
            "causal" in s.passed or s.current == "causal"
        )
        module = s.module(h, d_model)
        args = _sweep_inputs(s, inputs, B, T_q, T_k, d_model)
        mask = None if kind is None else _sweep_mask(s, kind, B, T_q, T_k)
        allowed = mask
        if is_causal:
            future = causal(T_q, T_k)
            allowed = future if mask is None else mask & future
        call = {}  # by keyword, or in this order by position
        if mask is not None or is_causal:
            call["mask"] = mask
        if is_causal:
            call["is_causal"] = True
        # How many of them go by position, the rest by keyword: none,
        # all, or the mask alone (a decorator that read them from *args
        # when there were any dropped is_causal there: an expert's
        # audit); by position only where the signature takes them so.
        given = list(call.items())
        first = min((0, len(given), 1)[n % 3], len(given))
        if first and not module.by_position(dict(given[:first])):
            first = 0
        positional = [value for _, value in given[:first]]
        named = dict(given[first:])
        sizes = f"T={T_q}"
        if not inputs.startswith("x"):
            sizes = f"T_q={T_q}, T_k={T_k}"
        where = f"at h={h}, d_model={d_model}, B={B}, {sizes}" + {
            "x transposed": ", the input a non-contiguous view",
            "q, k, v transposed": ", the inputs non-contiguous views",
            "x, x, y": ", value not key",
            "q, kv, kv": ", key is value",
        }.get(inputs, "")
        if kind is not None:
            where += f", with a {kind} mask"
        if is_causal:
            where += " and is_causal=True" if kind else ", with is_causal=True"
        if positional and named:
            where += " (the mask by position, is_causal by keyword)"
        elif positional:
            where += " (passed by position)"
        got = s.forward(
            module, args + (positional or []), where=where, **named
        )  # fmt: skip
        suspects = []
        if bool(kind) != is_causal:  # one of them, found applied before
            name = "mask" if kind else "is_causal"
            suspects.append((
                f"here your forward ignores {name}, though it applied it in "
                f"the calls before: a path of its own for these sizes or "
                f"arguments skips it; apply {name} on every path, before "
                f"the softmax", {},
            ))  # fmt: skip
        if kind and is_causal:
            suspects += [
                ("is_causal was dropped because a mask was given: a key "
                 "must be allowed by both, combine them (mask & causal)",
                 {"allowed": mask}),
                ("the mask was dropped because is_causal was given: a key "
                 "must be allowed by both, combine them (mask & causal)",
                 {"allowed": causal(T_q, T_k)}),
            ]  # fmt: skip
        elif is_causal:
            suspects += _causal_suspects(T_q, T_k)
        compare(
            module, args, got, twin(module, *args, allowed), where,
            suspects=suspects, otherwise=SWEEP_HINT,
        )  # fmt: skip
        s.drop([module.id])
    return "; across h = 1 to 8, B = 1 to 6, T = 1 to 19 too"


CAUSAL_HINT = (
    "query i may see keys 0..i: torch.ones(T_q, T_k, dtype=torch.bool)"
    ".tril(), made anew for each call's T"
)


def _causal_suspects(T_q: int, T_k: int) -> list:
    suspects = [
        ("your forward ignores is_causal", {}),
        ("your causal mask is off by one and blocks the diagonal: query i "
         "must see key i, so keep torch.tril(..., diagonal=0)",
         {"allowed": causal(T_q, T_k, -1)}),
        ("your causal mask is off by one and lets query i see key i+1: "
         "use torch.tril(..., diagonal=0)",
         {"allowed": causal(T_q, T_k, 1)}),
        ("your causal mask keeps the future and blocks the past: keep the "
         "lower triangle (tril), not triu",
         {"allowed": ~causal(T_q, T_k, -1)}),
    ]  # fmt: skip
    if T_q != T_k:
        suspects.append((
            f"your causal mask is aligned bottom-right (query i sees keys "
            f"0..i+{T_k - T_q}); here query i sees keys 0..i, top-left: "
            f"torch.ones(T_q, T_k, dtype=torch.bool).tril()",
            {"allowed": causal(T_q, T_k, T_k - T_q)},
        ))  # fmt: skip
    return suspects


def check_causal(s: Session) -> str:
    """``is_causal=True``: query i sees keys 0..i; later calls at other
    T on the same module, a long one too; ``mask`` and ``is_causal``
    together, the mask (B, 1, 1, T_k) and (B, 1, T, T)."""
    module = s.module(2)
    _require(module, "is_causal")
    x = s.inputs(2, 5)
    _plain_first(s, module, (x, x, x), "at h=2", "without is_causal")
    for T, where in ((5, "with is_causal=True at T=5"),
                     (7, "with is_causal=True at T=7, the same module's "
                         "second call (the first was T=5)"),
                     (CAUSAL_LONG_T, "with is_causal=True on a long "
                      f"sequence (T={CAUSAL_LONG_T})")):  # fmt: skip
        x = s.inputs(2, T)
        got = _forward_hinted(
            s, module, (x, x, x), where,
            T == 7 and "at T=5 it ran, so something is sized for the first "
            "call: take sizes from this call (B, T, _ = query.shape; the "
            "causal mask from scores.shape[-2:]); a mask kept from the "
            "first call has the wrong size",
            is_causal=True,
        )  # fmt: skip
        try:
            _finite_fill(got, causal(T, T), where)
            compare(
                module, (x, x, x), got, twin(module, x, x, x, causal(T, T)),
                where, suspects=_causal_suspects(T, T),
                otherwise=LONG_HINT if T == CAUSAL_LONG_T else CAUSAL_HINT,
            )  # fmt: skip
        except Failed as failed:
            if "masks" in s.passed:
                raise
            # Wrong without is_causal too, on a new input: state kept
            # from an earlier call, not the masking step.
            _fresh(s, module, "at h=2", x.shape)
            # One masking step serves both: its fault shows here too, and
            # the generic hint (tril, made anew) described what the
            # student wrote (a project student's run): not repeated.
            said = str(failed).removesuffix(f": {CAUSAL_HINT}")
            raise Failed(
                f"{said}; milestone masks failed as well, so how a mask "
                f"is applied is the likely cause (False -> -inf in the "
                f"scores, before the softmax): fix milestone masks first"
            ) from None
    if "h>1" in s.passed:  # its gradients were right without a mask
        _masked_gradients(
            s, module, s.inputs(2, 5), causal(5, 5), "with is_causal=True",
            is_causal=True,
        )  # fmt: skip
    _require(module, "mask")
    x = s.inputs(2, 5)
    pad = padding([5, 3], 5)  # (B, 1, 1, T_k)
    both = pad & causal(5, 5)  # (B, 1, T_q, T_k)
    where = "with a padding mask and is_causal=True together"
    got = s.forward(module, (x, x, x), where=where, mask=pad, is_causal=True)
    if "masks" not in s.passed:
        differ = _differences(got, twin(module, x, x, x, both))
        if differ:
            raise Failed(
                f"{' and '.join(differ)} {where}: the mask alone is "
                f"already wrong; fix milestone masks first"
            )
    _finite_fill(got, both, where)
    compare(
        module, (x, x, x), got, twin(module, x, x, x, both), where,
        suspects=[
            ("is_causal replaced the mask: a key must be allowed by both, "
             "combine them (mask & causal) instead of choosing one",
             {"allowed": causal(5, 5)}),
            ("the mask made you skip is_causal: a key must be allowed by "
             "both, combine them (mask & causal)", {"allowed": pad}),
        ],
        otherwise="a key must be allowed by both the mask and the causal "
        "rule: apply both before the softmax",
    )  # fmt: skip
    # The same in train mode, with gradients: a forward whose training
    # path dropped is_causal beside a mask passed every eval call (an
    # expert's audit).
    if "h>1" in s.passed:
        _masked_gradients(
            s, module, x, both, "with a padding mask and is_causal=True",
            mask=pad, is_causal=True,
        )  # fmt: skip
    # A mask with a row per query, (B, 1, T, T), that allows later keys:
    # is_causal still applies. nn.MultiheadAttention reads is_causal as a
    # hint that the mask is causal already, and a forward that dropped
    # it for such a mask passed the padding mask above (an expert's
    # audit).
    # A window (query i sees keys i-1..i+1) and padding: neither a
    # prefix of the keys nor causal.
    window = causal(5, 5, 1) & ~causal(5, 5, -2)  # (T_q, T_k)
    rows = padding([5, 4], 5) & window  # (B, 1, T_q, T_k)
    both = rows & causal(5, 5)
    where = "with a mask (B, 1, T, T) that allows later keys and is_causal"
    got = s.forward(module, (x, x, x), where=where, mask=rows, is_causal=True)
    # (A finite fill's sliver of weight, named: it read as precision.)
    _finite_fill(got, both, where)
    compare(
        module, (x, x, x), got, twin(module, x, x, x, both), where,
        suspects=[
            ("is_causal was dropped because the mask has a row per query "
             "(nn.MultiheadAttention takes is_causal as a hint that the "
             "mask is causal already): here is_causal always applies: "
             "combine them (mask & causal)", {"allowed": rows}),
        ],
        otherwise="a key must be allowed by both the mask and the causal "
        "rule: apply both before the softmax",
    )  # fmt: skip
    _large(s, module, s.inputs(2, 5), "with is_causal=True", is_causal=True)
    device = _on_another_device(s, module, x, mask=pad, is_causal=True)
    return (
        f"query i sees keys 0..i at T=5, 7 and {CAUSAL_LONG_T}, large inputs "
        f"too"
        + (", gradients too" if "h>1" in s.passed else "")
        + "; mask & causal combine"
        + _sweep(s, SWEEP_CAUSAL)
        + device
        + _nan_rows(s, module)
    )


def _nan_rows(s: Session, module: Module) -> str:
    """A note for the pass line where a query with every key blocked (a
    left-padded batch under is_causal) gets NaN: the comparisons take
    NaN for the 0 mha_ref gives such a row (nn.MultiheadAttention gives
    NaN too with need_weights=True, zeros without), but a loss over that
    batch gets NaN gradients in W_V and W_O, and one optimizer step
    ruins the model (an attacker's audit of a plain masked_fill and
    softmax, which passed 7 of 7 silently)."""
    x = s.inputs(2, 5)
    pad = padding([2, 4], 5).flip(-1)  # (B, 1, 1, T_k): first keys blocked
    got = s.forward(
        module, (x, x, x), where="with left padding and is_causal=True",
        mask=pad, is_causal=True,
    )  # fmt: skip
    if not any(t.isnan().any() for t in got):
        return ""
    return (
        "; note: a query whose every key is blocked (left padding under "
        "is_causal) gets NaN from your softmax, and a loss over such a "
        "batch gets NaN gradients: mha_ref gives that row zeros "
        "(slides/53-show-it-off.html)"
    )


def _on_another_device(s: Session, module: Module, x, **kwargs) -> str:
    """A note for the pass line if the forward fails on another device:
    run once more on ``meta``, which stands in for a GPU, a mask made
    without ``device=`` stays on the CPU and raises there. A note, not a
    failure: on the CPU, where this grader and the lesson run, the
    module is right. Only a two-devices error counts, and PyTorch's
    refusal of a mask with ``is_causal`` (its CPU kernel combines them;
    a GPU's raises, as ``meta`` does: an attacker's module passed
    silently): ``meta`` tensors hold no numbers, so code that reads one
    (``.item()``) may raise there and still run on a GPU.

    Each path once: without a mask, ``is_causal`` alone, then
    ``kwargs`` (a mask and ``is_causal``): a default mask of all True
    made on the CPU when none is given raised in every call without
    one, and the one call with both passed (an attacker's audit)."""
    where = "on another device ('meta', standing in for a GPU)"
    calls = [({}, " without a mask")]
    if "is_causal" in kwargs:
        calls.append(({"is_causal": True}, " with is_causal alone"))
    calls.append((kwargs, ""))
    for call, which in calls:
        try:
            s.child.request(
                "elsewhere", f"forward {where}{which}", id=module.id,
                args=[x, x, x], kwargs=call,
            )  # fmt: skip
        except StudentError as error:
            text = str(error)
            if "cpu" in text and "meta" in text and "device" in text:
                return (
                    f" (but on a GPU it would raise: {text}; make the mask "
                    f"on the scores' device, torch.ones(T_q, T_k, dtype="
                    f"torch.bool, device=scores.device))"
                )
            if "attn_mask" in text and "is_causal" in text:
                return (
                    f" (but on a GPU it would raise: {text}; give "
                    f"scaled_dot_product_attention the mask with the causal "
                    f"rule in it, or is_causal alone)"
                )
    return ""


def _in_float64(s: Session, module: Module, x) -> str:
    """A note for the pass line if forward raises once the model and its
    input are float64 (``model.double()``): a dtype typed into forward
    (``torch.softmax(scores, dim=-1, dtype=torch.float32)``, a tensor
    made with ``dtype=torch.float32``) is right in float32, where this
    grader runs, and passed 7 of 7 with no word (an attacker's audit).
    A note, as for another device: only an error that names the dtype."""
    try:
        s.child.request(
            "elsewhere", "forward in float64 (model.double())", id=module.id,
            args=[x, x, x], kwargs={}, dtype="float64",
        )  # fmt: skip
    except StudentError as error:
        # (Not the float32 run's hint, "no .double()": here the grader
        # made it float64.)
        text = str(error).removesuffix(_lesson_hint(error.said))
        # (Its own words: the request's name above says float64 too.)
        if re.search(r"double|float64", error.said, re.IGNORECASE):
            return (
                f" (but in float64 (model.double()) it would raise: {text}; "
                f"compute in the input's dtype: no dtype= in forward, and "
                f"tensors made there take dtype=scores.dtype)"
            )
    return ""


def check_cross(s: Session) -> str:
    """Cross-attention: 3 queries over 7 keys, value != key, three tensors
    of one length, key is value (with gradients); a padding and a (T_q,
    T_k) mask; then ``is_causal`` with T_q != T_k (top-left), alone and
    with a mask."""
    module = s.module(2)
    q, k, v = s.inputs(2, 3), s.inputs(2, 7), s.inputs(2, 7)
    where = "with T_q=3, T_k=7 (value != key)"
    try:
        got = s.forward(module, (q, k, v), where=where)
    except StudentError as error:
        hint = _length_hint(str(error), B=2, T_q=3, T_k=7)
        if hint:
            raise StudentError(f"{error}: {hint}") from None
        raise
    want = twin(module, q, k, v)
    if "h>1" not in s.passed and _differences(got, want):
        raise Failed(
            f"{' and '.join(_differences(got, want))} {where}: the values "
            f"are wrong at T_q = T_k already; fix milestone h>1 first"
        )
    compare(
        module, (q, k, v), got, want, where, suspects=VALUE_SUSPECTS,
        otherwise="project each of query, key, value with its own matrix "
        "and split each by its own length",
    )  # fmt: skip
    # A new key and value of the same shapes, as a decoder's next batch
    # brings a new encoder output: a K/V cache kept on self for inference
    # (keyed on the key's id and _version, which a new tensor can reuse)
    # answered from the last one (an expert's audit, round 10).
    q, k, v = s.inputs(2, 3), s.inputs(2, 7), s.inputs(2, 7)
    where = "with T_q=3, T_k=7 on a new key and value"
    got = s.forward(module, (q, k, v), where=where)
    compare(
        module, (q, k, v), got, twin(module, q, k, v), where,
        otherwise=f"right on the first key and value, wrong on the next: "
        f"{FROM_BEFORE} (keys or values cached on self)",
    )  # fmt: skip
    # The same lengths, three different tensors: a "self-attention fast
    # path" chosen by shape (query.shape == key.shape) projected key and
    # value from the query, and passed at T_q != T_k (an expert's audit).
    q, k, v = s.inputs(2, 5), s.inputs(2, 5), s.inputs(2, 5)
    where = "with T_q = T_k = 5 and query, key, value three tensors"
    got = s.forward(module, (q, k, v), where=where)
    compare(
        module, (q, k, v), got, twin(module, q, k, v), where,
        suspects=[(
            "key and value are projected from the query when the three "
            "have the same shape: equal sizes do not make them the same "
            "tensor; project self.W_K(key) and self.W_V(value) always",
            {"key_from": "query", "value_from": "query"},
        ), *VALUE_SUSPECTS],
        otherwise="project each of query, key, value with its own matrix, "
        "whatever their sizes",
    )  # fmt: skip
    # An encoder-decoder call, mha(decoder, encoder, encoder): key is
    # value. A forward that fused K and V into one projection when key is
    # value unpacked the two swapped, and one that detached key and value
    # whenever key is not query gave the encoder no gradient; every call
    # above passed key and value apart (an expert's audit). In train
    # mode, its gradients once h>1 found them right for self-attention.
    # Then three tensors in train mode too: a projection whose backward
    # handed key's gradient to value and value's to key cancelled out
    # where key is value (an expert's audit).
    q, kv = s.inputs(2, 3), s.inputs(2, 7)
    for args, what in (((q, kv, kv), "key is value (mha(q, kv, kv))"),
                       ((q, s.inputs(2, 7), s.inputs(2, 7)),
                        "three tensors")):  # fmt: skip
        where = f"with T_q=3, T_k=7 and {what}"
        grads = None
        if "h>1" in s.passed:
            grads = (torch.randn(2, 3, D_MODEL, generator=s.gen),
                     torch.randn(2, 2, 3, 7, generator=s.gen))  # fmt: skip
            where += " in train mode"
        elif what == "three tensors":
            break  # (the values of three tensors were compared above)
        got = s.forward(module, args, where=where, train=bool(grads),
                        grads=grads)  # fmt: skip
        want = twin(module, *args, grads=grads)
        if grads:
            (got, got_grads), (want, want_grads) = got, want
        compare(
            module, args, got, want, where, suspects=VALUE_SUSPECTS,
            otherwise="the same tensor as key and value is still two "
            "projections: self.W_K(key) and self.W_V(value), whatever "
            "tensors they are",
        )  # fmt: skip
        if grads:
            _same_gradients(
                got_grads, want_grads, f"after one backward pass {where}",
                "key and value stay in the graph, each with its own "
                "gradient: do not .detach() them (or anything made from "
                "them) in cross-attention either",
            )  # fmt: skip
    q, k, v = s.inputs(2, 3), s.inputs(2, 7), s.inputs(2, 7)
    done = (
        "T_q=3, T_k=7 and T_q=T_k=5 with value != key, and key is value, match"
    )
    if "masks" in s.passed:
        # Padding over the keys: (B, 1, 1, T_k) broadcasts against the
        # scores (B, h, T_q, T_k) as it is; made (B, h, T_q, T_q), it
        # fitted only while T_q = T_k.
        allowed = padding([7, 4], 7)
        where = "with T_q=3, T_k=7 and a padding mask (B, 1, 1, T_k)"
        got = _forward_hinted(
            s, module, (q, k, v), where,
            "the mask broadcasts against the scores (B, h, T_q, T_k) as it "
            "is; do not expand or reshape it with the query's length",
            mask=allowed,
        )  # fmt: skip
        compare(
            module, (q, k, v), got, twin(module, q, k, v, allowed), where,
            otherwise="block a key where mask is False: "
            "scores.masked_fill(~mask, float('-inf')) before the softmax",
        )  # fmt: skip
        # A (T_q, T_k) mask at B = T_q = 3, neither causal nor a prefix:
        # a forward that read a 2-D mask whose first size is B as (B,
        # T_k) padding passed every square one (an expert's audit).
        q3, k3, v3 = s.inputs(3, 3), s.inputs(3, 7), s.inputs(3, 7)
        # Every third key left out, from another key in each row.
        i, j = torch.arange(3)[:, None], torch.arange(7)[None, :]
        allowed = (i + j) % 3 != 0  # (T_q, T_k)
        _with_mask(
            s, module, (q3, k3, v3), allowed,
            "with B = T_q = 3, T_k = 7 and a 2-D mask (T_q, T_k)",
            suspects=[(IGNORES_MASK, {})],
            otherwise="a 2-D mask is (T_q, T_k), whatever B is: tell a "
            "mask's axes by its number of dimensions, never by comparing "
            "sizes with B",
        )  # fmt: skip
        done += ", and with padding and (T_q, T_k) masks"
    if "causal" not in s.passed:
        return (
            f"{done} (is_causal with T_q != T_k is checked once milestone "
            f"causal passes)" + _sweep(s, SWEEP_CROSS)
        )
    # T_q = 5 twice on this module, T_k = 5 then 7: a mask cached by T_q
    # alone is met again (one kept on self passed: a helper's audit; one
    # kept in the file's globals, from milestone causal's (5, 5) masks).
    # One query (as in generation): top-left, it sees key 0 only; a
    # forward that drops is_causal when T_q == 1 (a KV cache's rule)
    # passed.
    for T_q, T_k in ((5, 5), (5, 7), (6, 4), (1, 6)):
        q, k, v = s.inputs(2, T_q), s.inputs(2, T_k), s.inputs(2, T_k)
        where = f"with is_causal=True, T_q={T_q}, T_k={T_k}"
        got = _forward_hinted(
            s, module, (q, k, v), where,
            "the causal mask must be (T_q, T_k), the scores' last two "
            "sizes, made for this call: not (T_q, T_q), nor one kept from "
            "an earlier call with the same T_q",
            is_causal=True,
        )  # fmt: skip
        compare(
            module, (q, k, v), got, twin(module, q, k, v, causal(T_q, T_k)),
            where, suspects=_causal_suspects(T_q, T_k),
            otherwise="query i sees keys 0..i: "
            "torch.ones(T_q, T_k, dtype=torch.bool).tril()",
        )  # fmt: skip
    if "masks" in s.passed:
        # The mask and is_causal together where T_q != T_k: a forward that
        # built the causal part as (T_q, T_q) to combine them raised here
        # (an expert's audit); every call above combined them at T = 5.
        q, k, v = s.inputs(2, 3), s.inputs(2, 7), s.inputs(2, 7)
        pad = padding([7, 4], 7)  # (B, 1, 1, T_k)
        where = "with T_q=3, T_k=7, a padding mask and is_causal=True"
        got = _forward_hinted(
            s, module, (q, k, v), where,
            "the causal mask combined with mask must be (T_q, T_k), the "
            "scores' last two sizes, not (T_q, T_q)",
            mask=pad, is_causal=True,
        )  # fmt: skip
        compare(
            module, (q, k, v), got, twin(module, q, k, v, pad & causal(3, 7)),
            where, suspects=_causal_suspects(3, 7),
            otherwise="a key must be allowed by both the mask and the "
            "causal rule (top-left: query i sees keys 0..i)",
        )  # fmt: skip
    return f"{done}; is_causal top-left, one query too" + _sweep(
        s, SWEEP_CROSS
    )


def _lesson_hint(error) -> str:
    """ ": <the lesson's fix>" for a slip torch words its own way (it
    says "Use .reshape(...)"; the lesson teaches .contiguous())."""
    if "view size is not compatible with input tensor's size" in str(error):
        return (
            ": after transpose(1, 2) the tensor is not contiguous: call "
            ".contiguous() before .view(B, T, d_model)"
        )
    if any(w in str(error) for w in ("unexpected indent", "an indented")):
        return (
            ": in the project notebook, a %%writefile -a cell adds to the "
            "file and %%writefile (without -a) starts it anew: run the "
            "cells again from milestone 1 down"
        )
    if re.search(r"\bexpected\b.*\b[Dd]ouble\b", str(error)):
        return (
            ": a float64 tensor met a float32 one: compute in the input's "
            "dtype (no .double(), no dtype=torch.float64 in forward)"
        )
    if short := _view_short(str(error)):
        return (
            f": that view holds {short[0]:,} of the tensor's {short[1]:,} "
            f"numbers, an axis short (the batch? the heads?): keep each, "
            f".view(B, T, h, d_k) to split and .view(B, T, d_model) to "
            f"merge, with B, T = x.shape[:2]"
        )
    rows = _MATMUL.search(str(error))
    width, d_model = map(int, rows.groups()) if rows else (0, 0)
    if 0 < width < d_model and d_model % width == 0:  # one head's rows
        return (
            f": a projection of d_model={d_model} features got rows of "
            f"{width} (one head's d_k?): W_Q, W_K and W_V take (B, T, "
            f"d_model) before the split, and W_O the heads merged back, "
            f"(B, h, T, d_k) -> (B, T, h*d_k) (not their mean, nor one "
            f"head at a time)"
        )
    if 'missing the required "forward" function' in str(error):
        return f": {NO_FORWARD}"
    # A demo at the file's end that saved a figure or the weights: the
    # student's folder is writable to the student, not to the file here
    # (mha_ref._isolate), and torch's words were "enforce fail".
    if "Read-only file system" in str(error):
        return (
            ": the grader runs your file where it may write nothing (its "
            "folder and your home are read-only there; tempfile's folder "
            "alone is not, and is emptied): keep saving and plotting in a "
            'demo under if __name__ == "__main__":, which the grader does '
            "not run"
        )
    # forward(query, key, value, mask, ...): a caller that needs no mask
    # leaves it out, and Python's words located no line of the file.
    missing = re.search(
        r"missing \d+ required (?:positional |keyword-only )?arguments?: "
        r"'(mask|is_causal)'",
        str(error),
    )
    if missing:
        return (
            f": a caller that needs no {missing[1]} leaves it out: give "
            f"{missing[1]} a default, {SIGNATURE}"
        )
    return ""


#: torch's message for a Linear given rows of the wrong width: (that
#: width, the Linear's in-features). A head's mean, or W_O applied per
#: head, told only torch's words (an expert's review).
_MATMUL = re.compile(
    r"mat1 and mat2 shapes cannot be multiplied \(\d+x(\d+) and (\d+)x\d+\)"
)


#: torch's message for a view of the wrong size: (the view, the size).
_VIEW_INVALID = re.compile(
    r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)"
)


def _view_short(error: str) -> tuple[int, int] | None:
    """(numbers the view holds, the tensor's) for a view that holds a
    whole part of them: an axis left out. A view of the query without
    its batch axis was told that "T_q=3 and T_k=7 differ" (an expert's
    audit)."""
    found = _VIEW_INVALID.search(error)
    if not found:
        return None
    shape = [int(n) for n in found[1].split(",")]
    size, held = int(found[2]), math.prod(shape)
    if -1 in shape or held <= 0 or size % held or size == held:
        return None
    return held, size


def _length_hint(error: str, B: int, T_q: int, T_k: int) -> str:
    """A view or a product that mixed up the two lengths, from torch's
    message: "shape '[...]' is invalid for input of size N" (which tensor
    had which), or a batch2 size error (the key or value projected from
    the query)."""
    if "batch2 tensor" in error:  # q @ k.T or weights @ v, lengths apart
        return (
            "the scores pair the query's length with the key's: project "
            "the key argument with W_K(key), and the value with W_V(value)"
        )
    found = _VIEW_INVALID.search(error)
    if not found or _view_short(error):  # (an axis short: said already)
        return ""
    shape = [int(n) for n in found[1].split(",")]
    size = int(found[2])
    if size % (B * T_q) == 0 and T_k in shape and T_q not in shape:
        return (
            "a tensor of the query's length was viewed with the key's: "
            "the attention output, and its merge, have the query's length "
            "T_q = query.size(1)"
        )
    if size % (B * T_k) == 0 and T_q in shape and T_k not in shape:
        return (
            "a tensor of the key's length was viewed with the query's: "
            "project the query argument with W_Q(query), and split key "
            "and value by their own length, key.size(1)"
        )
    return f"T_q={T_q} and T_k={T_k} differ: each tensor keeps its length"


def _started(pid: int) -> str:
    """When process ``pid`` started (/proc/<pid>/stat), or ""."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def _kill(pid: int) -> None:
    try:
        os.kill(pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


#: Characters that act instead of showing: C0 and C1 controls (but tab
#: and newline), bidirectional overrides, and the line and paragraph
#: separators (U+0085 is C1), which str.splitlines(), an editor or a
#: report reading the output splits a line at: a message of them showed
#: one FAIL line in a terminal and read as PASS lines to a program.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
    r"\u2066-\u2069\u200e\u200f\u061c]"
)


def _visible(text: str) -> str:
    """Control characters (but tab and newline) as \\xNN or \\uNNNN."""
    return _CONTROL.sub(
        lambda m: (
            f"\\x{ord(m[0]):02x}"
            if ord(m[0]) < 0x100
            else f"\\u{ord(m[0]):04x}"
        ),
        text,
    )


def _signature_problem(params: list[str], positional: list[str]) -> str:
    """What keeps ``forward(query, key, value)`` from being called as the
    lesson calls it, or "": a forward of one input (self-attention only)
    takes the key as its mask, or takes too few arguments; or a caller
    passing the mask by position, ``mha(x, x, x, mask)``, would give it
    to another parameter (``forward(q, k, v, is_causal=False,
    mask=None)`` passed every keyword call: an expert's audit).
    ``positional``: the parameters a positional argument fills, in
    order."""
    if "**" in params[:1]:  # a decorated forward takes anything
        return ""
    wanted = ("mask", "is_causal")
    pairs = zip(positional[3:5], wanted, strict=False)  # the first two
    for place, (name, want) in enumerate(pairs):
        if name != want:
            call = ", ".join(("x", "x", "x", *wanted[: place + 1]))
            return (
                f"forward({', '.join(params)}) takes {name} as its "
                f"{('fourth', 'fifth')[place]} argument: a caller passing "
                f"{want} by position (mha({call})) would give it to "
                f"{name}; the lesson's signature is {SIGNATURE}"
            )
    # Up to an *args, which takes the rest
    named = params[: params.index("*")] if "*" in params else params
    early = [p for p in ("mask", "is_causal") if p in named[:3]]
    if early or ("*" not in params and len(params) < 3):
        return (
            f"forward({', '.join(params)}) "
            + (f"takes {early[0]} among its first three parameters"
               if early else "takes fewer than three tensors")
            + f"; they are query, key and value (cross-attention passes "
            f"three): {SIGNATURE}"
        )  # fmt: skip
    return ""


def _require(module: Module, name: str) -> None:
    """``forward`` takes ``name`` (or any keyword: a decorated forward).
    A class with no forward is told that, as the milestones that call it
    are (it was told "forward has no mask parameter": an attacker's
    "foward" typo)."""
    if module.no_forward:
        raise Failed(NO_FORWARD)
    if not {name, "**"} & set(module.forward_parameters):
        raise Failed(
            f"forward has no {name} parameter; the lesson's signature is "
            f"{SIGNATURE}"
        )


# name, check: in order; a check returns what passed or raises Failed.
MILESTONES: tuple[tuple[str, Callable[[Session], str]], ...] = (
    ("skeleton", check_skeleton),
    ("shapes", check_shapes),
    ("h=1", check_one_head),
    ("h>1", check_many_heads),
    ("masks", check_masks),
    ("causal", check_causal),
    ("T_q!=T_k", check_cross),
)


# --- running it ----------------------------------------------------------


def grade(
    path: str | Path,
    timeout: float = TIMEOUT_S,
    *,
    seed: int | None = None,
    upto: str | None = None,
    file=None,
    say_seed: bool = False,
) -> int:
    """Print one line per milestone to ``file`` (default stdout); return
    how many of the milestones run did not pass (all of them when the
    file cannot be loaded). ``upto``: run the milestones up to and
    including this one (the project notebook grades one step at a time).
    ``say_seed``: after a failure, a line naming the seed to rerun with
    (the command line's ``--seed``) - unless the file did not load: no
    number was drawn then.
    """
    path = Path(path).resolve()
    out = file or sys.stdout
    names = [name for name, _ in MILESTONES]
    if upto is not None and upto not in names:
        raise ValueError(f"upto must be one of {names}, got {upto!r}")
    milestones = MILESTONES[: names.index(upto) + 1] if upto else MILESTONES
    width = max(len(name) for name in names)
    seed = secrets.randbits(63) if seed is None else seed
    reached = set()  # the milestones reported on

    def report(status: str, name: str, detail: str) -> None:
        # One line each, whatever a file name or a message holds.
        reached.add(name)
        detail = _visible(detail).replace("\n", "\\n")
        out.write(f"{status} {name:<{width}}  {detail}\n")
        out.flush()

    with undumpable(), _one_thread():
        failed = _grade(path, timeout, seed, milestones, report)
    if say_seed and failed and reached - {"load"}:
        out.write(f"(these numbers came from --seed {seed}: rerun with it)\n")
    return failed


@contextlib.contextmanager
def _one_thread():
    """torch on one thread while grading, then as it was (a notebook's
    kernel keeps its own). The tensors are tiny: a pool of threads only
    waits for each other (a correct module, in one process on 2 cores:
    0.92-1.25 s a grade with torch's default threads, 0.64-0.67 s with
    one)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _grade(path, timeout, seed, milestones, report) -> int:
    session = Session(path, timeout, seed)
    try:
        session.start()
    except (Failed, StudentError, TimedOut) as error:
        session.close()
        report("FAIL", "load", str(error))
        return len(milestones)

    def ran_out(number: int, why: str) -> None:
        """This milestone failed for time, the rest not run."""
        report("FAIL", milestones[number][0], why)
        for skipped, _ in milestones[number + 1 :]:
            report(
                "SKIP", skipped, "not run: an earlier check ran out of time"
            )

    try:
        for number, (name, run) in enumerate(milestones):
            session.current = name
            if time.monotonic() >= session.deadline:
                # (A diagnosis's requests may have spent the rest.)
                ran_out(number, Child._over_text(session.timeout))
                break
            if session.child is None:  # the last one ended it: start anew
                try:
                    session.start()
                except (Failed, StudentError, TimedOut) as error:
                    # The next milestone starts anew (a closed child left
                    # here read as the file writing into the pipe).
                    session.close()
                    report("FAIL", name, f"could not restart: {error}")
                    continue
            try:
                session.drop()  # the last milestone's modules
                session.last = None
                detail = run(session)
            except (Failed, StudentError) as error:
                report("FAIL", name, _explained(session, error))
                if session.child.process.poll() is not None:
                    session.close()
                continue
            except RuntimeError as error:
                # torch could not compare what came back (a tensor on the
                # meta device, gradients of another shape).
                first = (str(error).strip().splitlines() or [""])[0][:200]
                report(
                    "FAIL",
                    name,
                    f"what your forward returned cannot be compared with "
                    f"the reference ({first}): return ordinary CPU tensors",
                )
                continue
            except (KeyError, TypeError, ValueError, IndexError) as error:
                # Only a reply the sandbox never writes gets here: the
                # student's code wrote to the grader's channel.
                report(
                    "FAIL",
                    name,
                    f"unreadable answer from the process "
                    f"running your file ({type(error).__name__})",
                )
                session.close()
                continue
            except TimedOut as error:
                ran_out(number, str(error))
                break
            except Exception as error:  # noqa: BLE001
                # Whatever else a reply made the checks raise: the file's
                # failure, never the grader's traceback without a summary.
                report(
                    "FAIL",
                    name,
                    f"what your code returned could not be checked "
                    f"({type(error).__name__}: "
                    f"{str(error).strip()[:200]})",
                )
                session.close()
                continue
            session.passed.add(name)
            report("PASS", name, detail)
    finally:
        session.close()
    return len(milestones) - len(session.passed)


def _explained(s: Session, error: Exception) -> str:
    """The failure's message, after what the module kept from an earlier
    call, if that is the cause (:func:`_kept_from_before`)."""
    if s.child is None or s.child.process.poll() is not None:
        return str(error)
    # (Its own diagnosis already, or another module's doing: a new
    # module resets what the class keeps, and answers right.)
    if FROM_BEFORE in str(error) or TOGETHER in str(error):
        return str(error)
    try:
        kept = _kept_from_before(s)
    except TimedOut:
        kept = ""
    except Exception:  # noqa: BLE001 - a diagnosis only: the failure stands
        # Replies no comparison can read (meta tensors made torch.equal
        # raise here, inside _grade's handler: a traceback, no summary).
        kept = ""
    return f"{kept} (what failed: {error})" if kept else str(error)


def check(path: str | Path = "my_mha.py", upto: str | None = None) -> None:
    """The project notebook's grading cell: :func:`grade`'s lines and
    the count that pass (the same checks and messages as the command
    line), without a return value for the notebook to echo."""
    names = [name for name, _ in MILESTONES]
    total = names.index(upto) + 1 if upto else len(names)
    failed = grade(path, upto=upto)
    print(f"{total - failed} of {total} milestones pass")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mha_ref.grade",
        description="Check your MultiHeadAttention, milestone by milestone.",
    )
    parser.add_argument("path", help="your .py file")
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        help="seconds each call of your code may run (default %(default)s)",
    )
    parser.add_argument(
        "--seed", type=int, default=None,
        help="draw the inputs and weights from this seed (default: random)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not Path(args.path).is_file():
        parser.error(f"no such file: {args.path}")
    path = Path(args.path)
    if path.suffix != ".py":
        if path.suffix == ".ipynb":
            advice = (
                "the project notebook writes yours with its %%writefile "
                "cells (my_mha.py): grade that file"
            )
        elif path.suffix.lower() == ".py":
            advice = f"rename it to {path.stem}.py (Python imports only that)"
        else:
            advice = "grade the Python file that defines MultiHeadAttention"
        parser.error(f"{args.path} is not a .py file: {advice}")
    # Each run draws new numbers (a file cannot be fitted to them); a
    # student rerunning after a fix may want the same ones: said on a
    # failure, short enough to type.
    seed = secrets.randbelow(10**6) if args.seed is None else args.seed
    failed = grade(args.path, args.timeout, seed=seed, say_seed=True)
    total = len(MILESTONES)
    print(f"{total - failed} of {total} milestones pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
