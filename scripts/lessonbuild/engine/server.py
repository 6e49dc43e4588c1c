"""Fork server: import torch and what snippets need once, fork per snippet.

Started by ``runner.py`` as ``python server.py ROOT TMP`` (a plain
script, stdlib only until it preloads, so it never depends on how
``scripts`` is importable). The protocol is JSON lines: the server
imports torch, writes ``{"ready": ...}``, then reads job batches from
stdin (each names the modules to preload first, see preload.py, the
threads per run and the run limits) and answers one line per finished
job and ``{"done": true}`` per batch. It exits on EOF, so one server can
serve many checks (``mkdocs serve``).

Each run is what ``python snippets/X.py`` run from the repo root would
be (or ``python -m MODULE ARGS``, for a job that names a module: the
build's homework notebook, see notebooks.py): its own process,
``__main__``, ``sys.argv``, ``sys.path[0]`` the snippet's folder, cwd
the root, stdout and stderr to files. Deliberate differences: the
interpreter and the imports are inherited instead of paid for
(``sys.argv[0]`` is the absolute path, as ``__file__`` is); the
environment is a fixed, minimal one (``run_environment``), never the
caller's, so no variable of the machine can change an output the cache
keeps; torch gets the cores divided among the runs that share them,
never more than its default; torch's generator starts from a random seed
instead of torch's fixed start-up seed, so a snippet that forgets to
seed prints different numbers on its two runs and is reported as
nondeterministic; the exit handlers the server's imports registered are
the server's, never run by a run (``_ExitWork``).

The sandbox (issue 31): a run cannot change what is published, cannot
reach a process outside it and cannot undo either.

- The server enters a user and mount namespace of its own and mounts
  the root read-only (``_sandbox_server``).
- Each run's child enters a private mount namespace, still owned by the
  server's user namespace, in which every mount is read-only but the
  run's folder (its ``scratch`` a size-bounded tmpfs, plus its tables
  file) and a fresh ``/dev/shm``; then a new user, mount and PID
  namespace. Mounts made in a more privileged user namespace are
  *locked* in a less privileged one: the run holds every capability in
  its own namespace and still cannot remount them writable, unmount
  them or bind around them (the kernel refuses: EPERM / EINVAL).
- The snippet runs in a PID namespace of its own (``/proc`` remounted,
  then locked by one more user namespace), whose PID 1 is a small init
  of ours (``_init``): it sees and can signal only processes it started,
  and when it ends the kernel kills every one of them. No process of
  the build, and no other run, has a pid it can name, and
  ``/proc/<pid>/root`` of an outside process is not there to walk
  through.
- Limits (``setrlimit``, per run): address space, processes (counted in
  the run's own user namespace) and the size of any file it writes
  (stdout included: capped while it is written, not after), with
  ``no_new_privs``.
- Every file a run opens is reported as it is opened (an audit hook
  appending to a file, so a run ending in ``os._exit`` loses nothing):
  under the root for the cache key; outside the root and the system's
  folders as an error; a run that starts a program or calls C through
  ctypes is never cached (what those read is not seen).

``LESSONBUILD_NO_SANDBOX=1`` runs snippets without any of this (for a
platform without user namespaces; never in CI).
"""

import atexit
import ctypes
import faulthandler
import gc
import importlib
import importlib.util
import io
import json
import os
import resource
import runpy
import select
import signal
import sys
import time
import traceback
import weakref

TABLES_ENV = "MHA_REF_TABLES_FILE"
NO_SANDBOX_ENV = "LESSONBUILD_NO_SANDBOX"
#: Seconds after which a running child no longer counts as busy.
SLOW_AFTER = 2.0
#: At most this many times the concurrency run at once (slow included).
SLOW_EXTRA = 4
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
# Seconds between the traceback dump (SIGUSR1) and SIGKILL on a timeout.
DUMP_GRACE = 0.3
#: What a run may read outside the root without it being an error: the
#: interpreter, its packages and the system (never a user's files).
SYSTEM_FOLDERS = ("/usr/", "/lib/", "/lib64/", "/etc/", "/proc/", "/sys/")
SYSTEM_FOLDERS += ("/dev/",)
#: Audit events after which what a run reads is no longer all seen.
UNTRACKED = {
    "subprocess.Popen": "started a program",
    "os.system": "started a program",
    "os.exec": "started a program",
    "os.posix_spawn": "started a program",
    "os.spawn": "started a program",
    "ctypes.dlopen": "called C code through ctypes",
    "ctypes.call_function": "called C code through ctypes",
}


def main():
    root, tmp = sys.argv[1], sys.argv[2]
    _die_with_parent()
    # Orphans of a run that escaped its PID namespace's init come here.
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Before any import starts a thread: unshare(CLONE_NEWUSER) refuses a
    # multithreaded process.
    sandboxed, error = True, ""
    _CGROUP.append(pids_cgroup() if os.getuid() == 0 else None)
    if not os.environ.get(NO_SANDBOX_ENV):
        sandboxed, error = _sandbox_server(root, tmp), _LAST_ERROR[:1]
    # The protocol gets a private copy of stdout; fd 1 itself goes to
    # stderr, so a stray print during preload cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    if not sandboxed:
        _send(
            proto,
            {
                "ready": False,
                "error": "no sandbox for the snippets: "
                + (error[0] if error else "user namespaces unavailable")
                + f"\n(set {NO_SANDBOX_ENV}=1 to run them unconfined, "
                "on a machine you trust)",
            },
        )
        return
    os.chdir(root)
    # As for `python snippets/X.py`: sys.path[0] is the snippet's folder.
    sys.path[0] = os.path.join(root, "snippets")
    os.environ.pop(TABLES_ENV, None)
    faulthandler.enable()

    # Importing torch allocates millions of objects; the cyclic collector
    # would walk them again and again for no garbage (measured: importing
    # torch, mha_ref, torch._dynamo and torch.distributed.tensor took
    # 2.8 s with it, 2.3 s without). Children turn it back on.
    gc.disable()
    try:
        import torch
    except BaseException:
        _send(proto, {"ready": False, "error": traceback.format_exc()})
        return
    default_threads = torch.get_num_threads()
    _PACKAGES.extend(_package_folders())
    # Forking after torch's OpenMP pool has started can deadlock the
    # child; with one thread the pool is never started in this process.
    # Children set their own number before running their snippet.
    torch.set_num_threads(1)
    gc.freeze()
    _send(proto, {"ready": True})
    for line in sys.stdin:
        batch = json.loads(line)
        _preload(batch.get("preload", ()))
        threads = min(default_threads, int(batch.get("threads", 0)) or 10**6)
        _run_batch(proto, root, batch, threads)
        _send(proto, {"done": True})
    if _CGROUP and _CGROUP[0]:
        _leave_pids_cgroup(_CGROUP[0], "")


def _preload(names):
    """Import the modules the batch's snippets need (engine/preload.py).

    A module that fails to import is left out: the child imports it
    again and fails like a standalone run. Modules imported for an
    earlier batch stay (a server under ``mkdocs serve`` lives across
    rebuilds). Then everything imported so far is moved out of the
    collector's sight (``gc.freeze``, made for pre-fork servers): a
    child's collection would otherwise touch every object of torch and
    copy every page.
    """
    fresh = [name for name in names if name not in sys.modules]
    for name in fresh:
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    if fresh:
        gc.freeze()


def _die_with_parent():
    """Be killed when the parent dies (Linux), so nothing runs on
    orphaned: the engine killed by Ctrl-C takes its servers along, and a
    server takes its children (they have their own process groups, so
    the terminal's SIGINT does not reach them)."""
    if not _prctl(PR_SET_PDEATHSIG, signal.SIGKILL):
        return
    if os.getppid() == 1:  # the parent died before prctl
        os._exit(1)


# --- the sandbox -------------------------------------------------------------

# <linux/sched.h>, <linux/mount.h>
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x20000, 0x10000000, 0x20000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MOUNT_ATTR_RDONLY, _AT_RECURSIVE, _AT_FDCWD = 1, 0x8000, -100
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture
# statvfs flag -> mount flag that must be kept on a remount in a user
# namespace (the kernel refuses to drop a locked flag).
_KEEP = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}
_LAST_ERROR = []
_CGROUP = []  # this server's pids cgroup folder, or None
#: Size of a run's scratch folder and of its /dev/shm (tmpfs, in RAM).
SCRATCH_SIZE = "256m"


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _libc():
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mount.argtypes = [ctypes.c_char_p] * 3 + [
            ctypes.c_ulong,
            ctypes.c_void_p,
        ]
        libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        _LIBC.append(libc)
    return _LIBC[0]


def _check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None):
    _check(
        _libc().mount(
            source and os.fsencode(source),
            os.fsencode(target),
            fstype and fstype.encode(),
            flags,
            data and data.encode(),
        ),
        f"mount {target}",
    )


def _set_readonly(path, readonly, recursive):
    """mount_setattr(2): set or clear read-only on the mount at ``path``
    (and every mount below it), leaving its other flags as they are."""
    attr = _MountAttr(
        _MOUNT_ATTR_RDONLY if readonly else 0,
        0 if readonly else _MOUNT_ATTR_RDONLY,
        0,
        0,
    )
    _check(
        _libc().syscall(
            _SYS_MOUNT_SETATTR,
            _AT_FDCWD,
            os.fsencode(path),
            _AT_RECURSIVE if recursive else 0,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        ),
        f"mount_setattr {path}",
    )


def _unshare(flags, uid, gid):
    """A new user namespace (and ``flags``) mapping our ids to
    themselves: files keep their owners."""
    _check(_libc().unshare(_CLONE_NEWUSER | flags), "unshare")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _sandbox_server(root, tmp):
    """Make ``root`` read-only for this process and its children: a
    private user and mount namespace in which ``root`` is bind-mounted
    read-only. ``tmp`` (the engine's folder, where runs write) must not
    be under it. False (the reason in ``_LAST_ERROR``) where it cannot be
    done: the server then refuses to run anything."""
    real = os.path.realpath(root)
    tmp = os.path.realpath(tmp)
    if tmp == real or tmp.startswith(real.rstrip(os.sep) + os.sep):
        _LAST_ERROR.append(f"the engine's folder {tmp} is inside {real}")
        return False
    try:
        flags = os.statvfs(real).f_flag
        _unshare(_CLONE_NEWNS, os.getuid(), os.getgid())
        keep = sum(m for s, m in _KEEP.items() if flags & s)
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount(real, real, None, _MS_BIND | _MS_REC)
        _mount(None, real, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | keep)
    except (OSError, AttributeError) as exc:
        _LAST_ERROR.append(str(exc))
        return False
    return True


def _sandbox_run(run_dir, tables):
    """In a fresh child of the server: everything read-only but the
    run's scratch (a new tmpfs), its tables file and a new /dev/shm;
    then a user, mount and PID namespace of its own, which locks those
    mounts. Returns; the caller forks the run (PID 1 of the namespace)."""
    uid, gid = os.getuid(), os.getgid()
    scratch = os.path.join(run_dir, "scratch")
    _check(_libc().unshare(_CLONE_NEWNS), "unshare")  # the server's userns
    _set_readonly("/", True, recursive=True)
    # /proc stays writable for the uid maps below (and the run's own
    # /proc, mounted over it, checks its own permissions).
    _set_readonly("/proc", False, recursive=False)
    size = f"size={SCRATCH_SIZE},mode=0700"
    _mount("tmpfs", scratch, "tmpfs", _MS_NOSUID | _MS_NODEV, size)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", _MS_NOSUID | _MS_NODEV, size)
    _mount(tables, tables, None, _MS_BIND)
    _set_readonly(tables, False, recursive=False)
    _unshare(_CLONE_NEWNS | _CLONE_NEWPID, uid, gid)


def _enter_run_namespace():
    """PID 1 of the run's namespace: its own /proc, then one more user
    namespace so that /proc too is locked (unmounting it would show the
    machine's processes)."""
    uid, gid = os.getuid(), os.getgid()
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _unshare(_CLONE_NEWNS, uid, gid)


def pids_cgroup():
    """A folder of the pids cgroup controller this process may make
    children in (``<controller>/lessonbuild-<pid>``), or None.

    RLIMIT_NPROC bounds a run's processes for any user but root (the
    kernel exempts uid 0); for a build run as root (CI), each run also
    gets a pids cgroup of its own, where the platform has the controller
    (cgroup v1, or v2 with pids delegated)."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = f"/sys/fs/cgroup/pids{path}"
        elif hid == "0" and controllers == "":
            base = f"/sys/fs/cgroup{path}"
            try:
                with open(os.path.join(base, "cgroup.subtree_control")) as f:
                    if "pids" not in f.read().split():
                        continue
            except OSError:
                continue
        else:
            continue
        folder = os.path.join(base.rstrip("/"), f"lessonbuild-{os.getpid()}")
        try:
            os.mkdir(folder)
            return folder
        except OSError:
            continue
    return None


def _join_pids_cgroup(folder, name, most):
    """Move this process into a new cgroup ``folder/name`` holding at
    most ``most`` tasks."""
    path = os.path.join(folder, name)
    os.mkdir(path)
    with open(os.path.join(path, "pids.max"), "w") as f:
        f.write(str(most))
    with open(os.path.join(path, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))


def _leave_pids_cgroup(folder, name):
    try:
        os.rmdir(os.path.join(folder, name))
    except OSError:
        pass


def _limit(limits):
    """The run's resource limits (``runner.Limits``), no_new_privs, and
    a write past the file size limit an error (EFBIG), not a signal."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    address_space = None
    if limits.get("memory"):  # beyond what the server's imports mapped
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
        address_space = mapped + limits["memory"]
    for name, value in (
        ("RLIMIT_AS", address_space),
        ("RLIMIT_NPROC", limits.get("processes")),
        ("RLIMIT_FSIZE", limits.get("file_size")),
    ):
        if value:
            resource.setrlimit(getattr(resource, name), (value, value))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def run_environment(job, scratch):
    """The whole environment of a run: the same on every machine."""
    bin_dir = os.path.dirname(sys.executable)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "MPLBACKEND": "agg",
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
        TABLES_ENV: job["tables"],
    }


_LIBC = []  # loaded once, in the server: each child would pay 0.7 ms


def _prctl(option, value):
    """prctl(2) (Linux); False where it is not available."""
    try:
        return _libc().prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _send(proto, message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()


# --- batches -----------------------------------------------------------------


def _run_batch(proto, root, batch, threads):
    queue = list(batch["jobs"])
    limit = max(1, int(batch["concurrency"]))
    timeout = float(batch["timeout"])
    limits = batch.get("limits", {})
    # A child still running after `slow` seconds is probably waiting
    # (a hang, a sleep): it stops counting against the limit, so two
    # hanging snippets cost about one timeout, not two.
    slow = SLOW_AFTER
    running = {}  # pid -> [job, start, deadline, pidfd]
    while queue or running:
        now = time.monotonic()
        busy = sum(1 for r in running.values() if now - r[1] < slow)
        while queue and busy < limit and len(running) < limit * SLOW_EXTRA:
            job = queue.pop(0)
            _send(proto, {"started": job["id"]})
            inherited = [proto.fileno()]
            inherited += [r[3] for r in running.values() if r[3] is not None]
            pid = _fork_child(root, job, threads, limits, inherited)
            busy += 1
            start = time.monotonic()
            try:
                pidfd = os.pidfd_open(pid)
            except (AttributeError, OSError):
                pidfd = None
            running[pid] = [job, start, start + timeout, pidfd]
        now = time.monotonic()
        wait = max(0.0, min(r[2] for r in running.values()) - now)
        if queue:  # look again when the youngest child turns slow
            wait = min(
                wait,
                max(0.01, max(r[1] for r in running.values()) + slow - now),
            )
        fds = [r[3] for r in running.values() if r[3] is not None]
        if len(fds) == len(running):
            select.select(fds, [], [], wait)
        else:
            time.sleep(min(wait, 0.005))
        for pid in list(running):
            job, start, deadline, pidfd = running[pid]
            done, status = os.waitpid(pid, os.WNOHANG)
            timed_out = False
            if not done and time.monotonic() >= deadline:
                timed_out = True
                status = _kill(pid)
            elif not done:
                continue
            if pidfd is not None:
                os.close(pidfd)
            del running[pid]
            _reap_adopted(running)
            if _CGROUP and _CGROUP[0]:
                _leave_pids_cgroup(_CGROUP[0], str(job["id"]))
            _send(
                proto,
                {
                    "id": job["id"],
                    "exit": os.waitstatus_to_exitcode(status),
                    "timed_out": timed_out,
                    "seconds": time.monotonic() - start,
                },
            )


def _children(pid):
    """The pids of ``pid``'s children (its run, for a sandboxed job)."""
    try:
        return [
            int(p) for p in _read(f"/proc/{pid}/task/{pid}/children").split()
        ]
    except (OSError, ValueError):
        return []


def _reap_adopted(running):
    """Kill and reap what this server adopted as subreaper that is not a
    running job: a run whose init lost its parent (it cannot, short of
    a kernel change, but nothing may outlive a run)."""
    for p in _children(os.getpid()):
        if p in running:
            continue
        try:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
        except (ProcessLookupError, PermissionError, ChildProcessError):
            pass


def _read(path):
    """A whole file, with raw reads."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kill(pid):
    """Dump the hung run's traceback (faulthandler), then kill it all:
    its PID namespace ends with its first process."""
    # The run: the grandchild of ``pid`` (its child is the namespace's
    # init), or ``pid`` itself without the sandbox.
    runs = [r for c in _children(pid) for r in _children(c)] or [pid]
    for target in runs:
        try:
            os.kill(target, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    end = time.monotonic() + DUMP_GRACE
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    for target in [*_children(pid), pid]:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return os.waitpid(pid, 0)[1]


# --- one run -----------------------------------------------------------------


def _fork_child(root, job, threads, limits, inherited):
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        try:
            os.setpgid(0, 0)  # a timeout also kills what it started
            _die_with_parent()
            for fd in inherited:  # the protocol, other runs' pidfds
                os.close(fd)
            os.makedirs(os.path.join(job["dir"], "scratch"), exist_ok=True)
            os.close(os.open(job["tables"], os.O_WRONLY | os.O_CREAT, 0o644))
            reads = os.open(
                job["reads"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
            )
            _redirect(job)
            if _CGROUP and _CGROUP[0] and limits.get("processes"):
                # + 1: this process, which waits for the run
                _join_pids_cgroup(
                    _CGROUP[0], str(job["id"]), limits["processes"] + 1
                )
            if not os.environ.get(NO_SANDBOX_ENV):
                _sandbox_run(job["dir"], job["tables"])
                # Signals meant for the run (the timeout's traceback
                # dump) are not this waiting parent's to die of.
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
                init = os.fork()
                if init:
                    _relay_exit(init)
                _die_with_parent()
                _enter_run_namespace()
                run = os.fork()
                if run:
                    _init(run)
                # Its parent is the namespace's init: pid 1 is no sign
                # of an orphan here (_die_with_parent would think so).
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
                signal.signal(signal.SIGUSR1, signal.SIG_DFL)
            scratch = os.path.join(job["dir"], "scratch")
            env = run_environment(job, scratch)
            os.environ.clear()
            os.environ.update(env)
            _limit(limits)
            # tempfile read TMPDIR in the server, if it was imported:
            # its documented setting points it at the run's scratch.
            if "tempfile" in sys.modules:
                sys.modules["tempfile"].tempdir = scratch
            _setup_child(root, job, threads)
            # A module job is the build's own code: what it reads is not
            # part of any snippet's cache key.
            if not job.get("module"):
                _record_reads(root, reads, job["path"], scratch)
        except BaseException:
            os.write(2, traceback.format_exc().encode())
            os._exit(71)
        code = _run_snippet(job)
    finally:
        os._exit(code)


def _init(run):
    """PID 1 of the run's namespace: reap what is orphaned there and end as
    the run ended (the kernel then kills whatever is left). The run is
    not PID 1 itself: the kernel ignores default-action signals sent to
    an init by its own processes, and a program that checks whether its
    parent is gone (``getppid() == 1``: a Jupyter kernel) would see its
    parent as gone."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(70)
        if pid == run:
            break
    _end_as(status)


def _relay_exit(pid):
    """Wait for the run (PID 1 of its namespace), then end as it ended."""
    _, status = os.waitpid(pid, 0)
    _end_as(status)


def _end_as(status):
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _redirect(job):
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        new = os.open(path, flags, 0o644)
        os.dup2(new, fd)
        os.close(new)


def _setup_child(root, job, threads):
    # Fresh streams, encoded the way a standalone run with its output
    # redirected would encode them (this process started the same way).
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False))
    )
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
        encoding=encoding,
        errors=errors,
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding=encoding,
        errors="backslashreplace",
        line_buffering=True,
    )
    os.chdir(root)
    if job.get("module"):  # as `python -m MODULE ARGS...` from the root
        sys.argv = [job["module"], *job.get("args", ())]
        sys.path[0] = root
    else:
        sys.argv = [job["path"]]
        sys.path[0] = os.path.dirname(job["path"])
    _ExitWork.install()
    faulthandler.enable(file=sys.stderr)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    gc.enable()  # as in a standalone run (the server turned it off)
    import torch

    torch.set_num_threads(threads)
    # A random seed for the CPU generator (torch.seed() also visits every
    # accelerator module: 2.8 ms per child; the server never starts one).
    torch.default_generator.seed()
    # Python reseeds `random` after a fork; numpy's global state is not
    # reseeded, so every child would share the server's numbers.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


class _ExitWork:
    """The exit work of the run's own code, and only that.

    The server's imports registered exit handlers and finalizers (torch's
    take ~40 ms after a fork, and an interpreter holding torch takes
    tenths of a second to tear down): a run ends with ``os._exit``
    after doing, in a standalone exit's order, what its own code
    registered: ``atexit`` handlers (last first), ``weakref.finalize``
    objects still alive (a TemporaryDirectory removed), and logging's
    shutdown. What it registers is seen through the public functions,
    replaced in the child for its code to call.
    """

    handlers = []
    finalizers = []

    @classmethod
    def install(cls):
        def register(func, *args, **kwargs):
            cls.handlers.append((func, args, kwargs))
            return func

        def unregister(func):
            cls.handlers[:] = [h for h in cls.handlers if h[0] != func]

        class finalize(weakref.finalize):
            __slots__ = ()

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                cls.finalizers.append(self)

        atexit.register, atexit.unregister = register, unregister
        weakref.finalize = finalize

    @classmethod
    def run(cls):
        while cls.handlers:
            func, args, kwargs = cls.handlers.pop()
            try:
                func(*args, **kwargs)
            except BaseException:
                traceback.print_exc()
        for f in reversed(cls.finalizers):
            try:
                if f.alive and f.atexit:
                    f()
            except BaseException:
                traceback.print_exc()
        logging = sys.modules.get("logging")
        if logging is not None:
            logging.shutdown()


def _package_folders():
    """Where the interpreter finds packages (sys.path) and where
    ``mha_ref`` is (an editable install is not on sys.path): what a run
    imports from there is in the cache key (cache.base_key), not data."""
    folders = [p for p in sys.path[1:] if p and os.path.isdir(p)]
    try:
        spec = importlib.util.find_spec("mha_ref")
        folders += list(spec.submodule_search_locations or ())
    except (ImportError, AttributeError, ValueError):
        pass
    return folders


_PACKAGES = []  # filled once, in the server (``main``)


def _record_reads(root, fd, own, scratch):
    """Note, as it happens, every file the snippet opens (audit hook).

    Under ``root``: for the cache key (the engine hashes each file named
    here, and a cached result whose files changed is run again); the
    snippet itself (``own``), already in the key, is left out. Outside
    the root, its scratch folder and ``SYSTEM_FOLDERS``: an error naming
    the file (a build elsewhere would not have it). A program started or
    C called through ctypes: the run is not cached. One line each, the
    first time, appended to ``fd`` (``R path``, ``O path``, ``X why``).
    """
    prefix = os.path.join(os.path.realpath(root), "")
    own = os.path.abspath(own)
    allowed = [os.path.join(os.path.realpath(scratch), "")]
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, *_PACKAGES}:
        allowed.append(os.path.join(os.path.realpath(p), ""))
    allowed = tuple(allowed) + SYSTEM_FOLDERS
    seen, paths = set(), set()

    def note(line):
        if line not in seen:
            seen.add(line)
            os.write(fd, (line + "\n").encode("utf-8", "surrogateescape"))

    def hook(event, args):
        if event in UNTRACKED:
            note("X " + UNTRACKED[event])
            return
        if event != "open" or not args:
            return
        path = args[0]
        if isinstance(path, int):
            return
        try:
            path = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        if path == own or path in paths:
            return
        paths.add(path)
        if path.startswith(prefix):
            real = os.path.realpath(path)
            if real.startswith(prefix) or real == prefix[:-1]:
                note("R " + path[len(prefix) :])
                return
            path = real
        mode, flags = (list(args[1:3]) + [None, None])[:2]
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR)
        ):
            return  # a write: outside the scratch folder it fails anyway
        if not path.startswith(allowed):
            real = os.path.realpath(path)
            if not real.startswith(allowed) and real + "/" not in allowed:
                note("O " + real)

    sys.addaudithook(hook)


def _run_snippet(job):
    """Run the job's snippet (or module) as __main__; return the exit
    status Python would."""
    code = 0
    try:
        if job.get("module"):
            runpy.run_module(
                job["module"], run_name="__main__", alter_sys=True
            )
        else:
            runpy.run_path(job["path"], run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _print_exception(exc, job.get("path"))
        code = 1
    try:
        _ExitWork.run()
    except BaseException:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            code = code or 120
    return code


def _exit_code(exc):
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _print_exception(exc, path):
    """Print the traceback from the snippet's frame on, as Python would."""
    tb = exc.__traceback__
    while path and tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


if __name__ == "__main__":
    main()
