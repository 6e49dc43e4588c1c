"""Keep the student's file away from the grader (Linux; stdlib only).

The grader's child runs the student's file as the same user as the
grader, and a same-user process can do anything to another: write
"PASS" lines into its stdout through ``/proc/<pid>/fd/1``, rewrite its
code with ptrace, stop it with SIGSTOP or kill it after forging a
report. So, before the child imports anything:

- it enters a user and PID namespace of its own and forks: the file then
  runs as PID 1 of a namespace where the grader has no process number
  to signal or trace, and when it ends, whatever it started ends too
  (nothing is left holding the reply pipe);
- the process left outside waits for it and ends as it ended; it is not
  dumpable, and the file runs one user namespace further down, so it
  holds no capability to trace or write that process either;
- the grader makes itself not dumpable while it grades (grade.py).

Where the kernel refuses (no user namespaces: another OS, or a distribution
that restricts them), the child runs as before; the verdicts, computed in
the grader from tensors, hold either way.

Called first thing in a fork of the grader's zygote (one thread, even
if torch started others in the zygote), or, in a fresh child, loaded by
path before ``mha_ref`` (whose ``__init__`` imports torch, which may
start threads: unshare refuses a threaded process).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

CLONE_NEWUSER, CLONE_NEWPID = 0x10000000, 0x20000000
PR_GET_DUMPABLE, PR_SET_DUMPABLE = 3, 4


@contextlib.contextmanager
def undumpable():
    """This process (the grader) not dumpable while grading: no process
    of its user without CAP_SYS_PTRACE may trace it or open its
    /proc/<pid>/fd and mem. Then as it was (a notebook's kernel)."""
    try:
        libc = ctypes.CDLL(None) if sys.platform.startswith("linux") else None
    except OSError:
        libc = None
    was = libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) if libc else -1
    if was > 0:
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield
    finally:
        if was > 0:
            libc.prctl(PR_SET_DUMPABLE, was, 0, 0, 0)


def _unshare(libc, flags: int, uid: int, gid: int) -> bool:
    """A new user namespace (and ``flags``) mapping our ids to
    themselves; False if the kernel refuses."""
    if libc.unshare(CLONE_NEWUSER | flags) != 0:
        return False
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    return True


def isolate() -> None:
    """Continue as PID 1 of a new namespace (see above), or as we are."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        if not _unshare(libc, CLONE_NEWPID, uid, gid):
            return
    except (OSError, AttributeError):
        return
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    pid = os.fork()
    if pid:
        _end_as(os.waitpid(pid, 0)[1])
    # The student's side: a user namespace below the waiting process's.
    _unshare(libc, 0, uid, gid)


def _end_as(status: int) -> None:
    """Exit as the child did: its code, or its signal."""
    if os.WIFSIGNALED(status):
        import signal

        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # no handler there
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
