"""Fork server: import torch and what snippets need once, fork per snippet.

Started by ``runner.py`` as ``python server.py ROOT`` (a plain script,
stdlib only until it preloads, so it never depends on how ``scripts`` is
importable). The protocol is JSON lines: the server imports torch,
writes ``{"ready": ...}``, then reads job batches from stdin (each names
the modules to preload first, see preload.py, and the threads per run)
and answers one line per finished job and ``{"done": true}`` per batch.
It exits on EOF, so one server can serve many checks (``mkdocs serve``).

Each child is what ``python snippets/X.py`` run from the repo root would
be (or ``python -m MODULE ARGS``, for a job that names a module: the
build's homework notebook, see notebooks.py): its own process,
``__main__``, ``sys.argv``, ``sys.path[0]`` the
snippet's folder, cwd the root, the same environment (plus
``MHA_REF_TABLES_FILE``), stdout and stderr to files. Deliberate
differences: the interpreter and the imports are inherited instead of
paid for (``sys.argv[0]`` is the absolute path, as ``__file__`` is);
torch gets the cores divided among the runs that share them (torch's
default, all cores for each of two runs on two cores, made both
slower: measured, the runs' total halved), never more than its
default; torch's generator starts from a
random seed instead of torch's fixed start-up seed, so a snippet that
forgets to seed prints different numbers on its two runs and is reported
as nondeterministic; exit handlers, finalizers and log handlers
registered by the server's imports are not the child's to run at its
exit (its own are); the server has already run a few small tensor
operations and a seeding (``_warm_torch``), so their one-time set-up is
inherited; glibc's heap asks for transparent huge pages, and
in a deck of many snippets Python objects come from glibc's malloc
(``runner.FORK_ENV``, ``MALLOC_ENV``: cheaper forks, the same results;
the environment itself is the run's).

What a snippet may not do (issue 14): the server first makes the root
read-only for itself and its children (a private mount namespace, when
the platform allows), so a snippet cannot change what is published; it
is the subreaper of every process a snippet starts, and after each run
kills whatever the run left (its process group, any process carrying
the run's token in its environment, adopted orphans); every file under
the root a snippet opens is reported (an audit hook) for the cache key.
"""

import atexit
import faulthandler
import gc
import importlib
import io
import json
import os
import runpy
import select
import signal
import sys
import time
import traceback
import weakref

TABLES_ENV = "MHA_REF_TABLES_FILE"
#: Marks every process of one job, so its leftovers can be found.
JOB_ENV = "SNIPPET_ENGINE_JOB"
#: Set by the runner: the environment before its allocator settings.
RESTORE_ENV = "SNIPPET_ENGINE_RESTORE_ENV"
#: Seconds after which a running child no longer counts as busy.
SLOW_AFTER = 2.0
#: At most this many times the concurrency run at once (slow included).
SLOW_EXTRA = 4
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
# Seconds between the traceback dump (SIGUSR1) and SIGKILL on a timeout.
DUMP_GRACE = 0.3


def main():
    root = sys.argv[1]
    _die_with_parent()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of snippets come to us
    # Before any import starts a thread: unshare(CLONE_NEWUSER) refuses a
    # multithreaded process.
    _read_only(root, sys.argv[2:])
    # The protocol gets a private copy of stdout; fd 1 itself goes to
    # stderr, so a stray print during preload cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    os.chdir(root)
    # As for `python snippets/X.py`: sys.path[0] is the snippet's folder.
    sys.path[0] = os.path.join(root, "snippets")
    os.environ.pop(TABLES_ENV, None)
    _restore_env()
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
    # Forking after torch's OpenMP pool has started can deadlock the
    # child; with one thread the pool is never started in this process.
    # Children set their own number before running their snippet.
    torch.set_num_threads(1)
    _warm_torch(torch)
    _settle_imports()
    _send(proto, {"ready": True})
    for line in sys.stdin:
        batch = json.loads(line)
        _preload(batch.get("preload", ()))
        threads = min(default_threads, int(batch.get("threads", 0)) or 10**6)
        _run_batch(proto, root, batch, threads)
        _send(proto, {"done": True})


def _warm_torch(torch):
    """Run, once, what nearly every snippet does first: make, reshape,
    multiply and print small tensors.

    The first call of an operator pays for lazy set-up (dispatch tables,
    kernel selection, the printing code); done here, every fork
    inherits it instead of paying again (measured on the bench's
    256-snippet deck: 8.2-8.7 -> 7.5-7.7 ms of CPU per run, the check
    3.8-4.3 -> 3.4-3.7 s). It computes on its own generator and keeps
    nothing (the seeding puts the default generator back, and every run
    reseeds it anyway), so no run can see it; with one thread (set
    before), no thread pool starts before a fork. A warm-up that fails
    only costs that time.
    """
    try:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2, 3, 4, generator=g)  # (B, T, d)
        w = torch.ones(4, 4)
        y = torch.nn.functional.linear(x, w, torch.zeros(4))  # (B, T, d)
        heads = y.view(2, 3, 2, 2).transpose(1, 2)  # (B, h, T, d_k)
        scores = heads @ heads.transpose(-2, -1) / 2.0  # (B, h, T, T)
        mask = torch.ones(3, 3, dtype=torch.bool).triu(1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        merged = (weights @ heads).transpose(1, 2).reshape(2, 3, 4)
        repr(merged), merged.tolist(), tuple(merged.shape)
        torch.allclose(merged, merged.contiguous())
        if not _accelerators_built(torch):
            # torch.manual_seed formats the stack for each accelerator's
            # lazy seeding, reading torch's sources (1.6 -> 0.8 ms per
            # run once done here). Without an accelerator that queued
            # seeding can never run; the CPU generator is put back.
            state = torch.random.get_rng_state()
            torch.manual_seed(0)
            torch.random.set_rng_state(state)
    except Exception:
        pass


def _accelerators_built(torch):
    """Whether this torch can drive a GPU: its lazy seeding (queued by
    torch.manual_seed until the device starts) could then run in a
    child, so the server must not queue one of its own."""
    return (
        torch.backends.cuda.is_built()
        or torch.backends.mps.is_built()
        or bool(getattr(torch._C, "_has_xpu", False))
    )


def _restore_env():
    """Put back what the runner set for this process's allocator only
    (``runner.FORK_ENV``): read at start-up, it has done its work, and
    children, and what they start, get the environment of the run."""
    saved = json.loads(os.environ.pop(RESTORE_ENV, "{}"))
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _preload(names):
    """Import the modules the batch's snippets need (engine/preload.py).

    A module that fails to import is left out: the child imports it
    again and fails like a standalone run. Modules imported for an
    earlier batch stay (a server under ``mkdocs serve`` lives across
    rebuilds).
    """
    fresh = [name for name in names if name not in sys.modules]
    for name in fresh:
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    if fresh:
        _settle_imports()


def _settle_imports():
    """Ready what was imported so far to be inherited by each fork."""
    # Their finalizers are the server's, and not run at its exit either:
    # a child never sees them (_own_exit_handlers), and the server's
    # exit only ends a check, so it stays quick.
    for info in list(weakref.finalize._registry.values()):
        info.atexit = False
    # Move everything imported so far out of the collector's sight: a
    # child's collection would otherwise touch every object of torch
    # and copy every page (copy-on-write); gc.freeze exists for pre-fork
    # servers like this one.
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


# <linux/sched.h>, <linux/mount.h>, <sys/statvfs.h>
_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = (
    1,
    32,
    4096,
    16384,
    1 << 18,
)
# statvfs flag -> mount flag that must be kept on a remount in a user
# namespace (the kernel refuses to drop a locked flag).
_KEEP = {2: 2, 4: 4, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}


def _read_only(root, writable):
    """Make ``root`` read-only for this process and its children.

    A private mount namespace (in a user namespace, so no privilege is
    needed) where ``root`` is bind-mounted read-only: a snippet that
    writes its slide, creates or deletes a file in the repository gets
    "Read-only file system" and fails, so what the engine checked is
    what MkDocs publishes. ``writable`` are folders that must stay
    writable (the engine's temporary folder); if one is under ``root``,
    or the platform has no namespaces (not Linux, or user namespaces
    disabled), nothing is changed and False is returned: the plugin's
    before/after fingerprint of docs/, snippets/ and mha_ref/ still
    catches a write.
    """
    if os.environ.get("LESSONBUILD_NO_SANDBOX"):
        return False
    real = os.path.realpath(root)
    for path in writable:
        path = os.path.realpath(path)
        if path == real or path.startswith(real.rstrip(os.sep) + os.sep):
            return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        flags = os.statvfs(real).f_flag
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
            return False
        # Map our own ids to themselves: files keep their owners.
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
        mount = libc.mount
        mount.argtypes = [
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_ulong,
            ctypes.c_void_p,
        ]
        keep = sum(m for s, m in _KEEP.items() if flags & s)
        target = real.encode()
        steps = (
            (None, b"/", _MS_REC | _MS_PRIVATE),
            (target, target, _MS_BIND | _MS_REC),
            (None, target, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | keep),
        )
        for source, where, how in steps:
            if mount(source, where, None, how, None) != 0:
                err = ctypes.get_errno()
                print(
                    f"snippet runner: read-only mount failed: "
                    f"{os.strerror(err)}",
                    file=sys.stderr,
                )
                return False
    except (OSError, AttributeError):
        return False
    return True


_LIBC = []  # loaded once, in the server: each child would pay 0.7 ms


def _prctl(option, value):
    """prctl(2) (Linux); False where it is not available."""
    try:
        if not _LIBC:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        return _LIBC[0].prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _send(proto, message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()


def _run_batch(proto, root, batch, threads):
    queue = list(batch["jobs"])
    limit = max(1, int(batch["concurrency"]))
    timeout = float(batch["timeout"])
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
            pid = _fork_child(root, job, threads, proto)
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
            _kill_leftovers(pid, job["token"], running)
            _send(
                proto,
                {
                    "id": job["id"],
                    "exit": os.waitstatus_to_exitcode(status),
                    "timed_out": timed_out,
                    "seconds": time.monotonic() - start,
                },
            )


def _kill_leftovers(pid, token, running):
    """Kill every process the finished job ``pid`` left behind.

    Its process group; every process that carries the job's token in
    its environment (children keep it across setsid and exec); and every
    orphan this server adopted as subreaper that is not a running job
    (a double fork out of the group). Repeated until none is found,
    since killing one can orphan another.

    Most jobs start no process: then their group is empty and this
    server has adopted nobody, and the sweep of /proc (every process's
    environment, 2-4 ms a job) finds nothing, so it is skipped. That is
    sound: a leftover outside the group whose parent lives has a first
    living ancestor below the dead job, and that one was adopted.
    """
    try:
        os.killpg(pid, signal.SIGKILL)
        group = True
    except ProcessLookupError:
        group = False
    except PermissionError:  # someone else's process is in it
        group = True
    if not group and _adopted(running) == set():
        return
    me = os.getpid()
    mine = _mark(token)
    others = [_mark(r[0]["token"]) for r in running.values()]
    for _ in range(50):
        found = [
            p
            for p, ppid, env in _processes()
            if p != me
            and p not in running
            and (
                mine in env
                or (ppid == me and not any(o in env for o in others))
            )
        ]
        if not found:
            return
        for p in found:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in found:
            try:
                os.waitpid(p, 0)  # ours (adopted); others: not a child
            except ChildProcessError:
                pass
        time.sleep(0.005)


def _adopted(running):
    """This server's children that are not running jobs: orphans it
    adopted as subreaper. None where /proc cannot list children."""
    children = set()
    try:
        for task in os.listdir("/proc/self/task"):
            listed = _read(f"/proc/self/task/{task}/children")
            children.update(int(p) for p in listed.split())
    except (OSError, ValueError):
        return None
    return children - set(running)


def _mark(token):
    return f"{JOB_ENV}={token}\0".encode()


def _processes():
    """(pid, ppid, environ bytes) of the processes /proc shows."""
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            stat = _read(f"/proc/{name}/stat")
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
            env = _read(f"/proc/{name}/environ")
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(name), ppid, env))
    return out


def _read(path):
    """A whole file, with raw reads: this runs after every job, over every
    process, and a Python file object costs twice the read (measured:
    stat and environ of 64 processes, 2.5 ms with open(), 1.2 ms)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kill(pid):
    """Dump the hung child's traceback (faulthandler), then kill its group."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        pass
    end = time.monotonic() + DUMP_GRACE
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    for target in (lambda: os.killpg(pid, 9), lambda: os.kill(pid, 9)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass
    return os.waitpid(pid, 0)[1]


def _fork_child(root, job, threads, proto):
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        try:
            _setup_child(root, job, threads, proto)
            # A module job is the build's own code: what it reads is not
            # part of any snippet's cache key.
            write_reads = (
                None
                if job.get("module")
                else _record_reads(root, job["reads"], job["path"])
            )
        except BaseException:
            os.write(2, traceback.format_exc().encode())
            os._exit(71)
        code = _run_snippet(job, write_reads)
    finally:
        os._exit(code)


def _setup_child(root, job, threads, proto):
    # Its own process group, so a timeout also kills what it started.
    os.setpgid(0, 0)
    _die_with_parent()
    proto.close()
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        new = os.open(path, flags, 0o644)
        os.dup2(new, fd)
        os.close(new)
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
    os.environ[TABLES_ENV] = job["tables"]
    os.environ[JOB_ENV] = job["token"]
    os.chdir(root)
    if job.get("module"):  # as `python -m MODULE ARGS...` from the root
        sys.argv = [job["module"], *job.get("args", ())]
        sys.path[0] = root
    else:
        sys.argv = [job["path"]]
        sys.path[0] = os.path.dirname(job["path"])
    _own_exit_handlers()
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


_SERVER_REGISTRIES = []


def _own_exit_handlers():
    """Keep the exit handlers a snippet's own resources need, not ours.

    The inherited ones belong to the server's imports: running them in
    every child is slow (torch's weakref finalizers take ~40 ms after a
    fork) and could release what the server still holds. A snippet's own
    handlers, temporary folders (weakref.finalize), logging and
    multiprocessing still run at its exit, as in a standalone run.

    The registries those walk start empty in the child: the server's
    finalizers and log handlers stay the server's (never run by a
    child, as before), and an exit no longer visits each of them, which
    cost a copy of every page they sit on (measured: 0.9 of the 5 ms a
    small snippet's child runs). The server's handlers flush on every
    record, so nothing a snippet logs through them is lost.
    """
    atexit._clear()
    # Kept, not dropped: freeing the server's registry would visit (and
    # copy) every page the child is meant to leave alone.
    _SERVER_REGISTRIES.append(weakref.finalize._registry)
    weakref.finalize._registry = {}
    # In the order `import torch` registers them (atexit runs the last
    # first): the snippet's finalizers, then multiprocessing, then logging.
    logging = sys.modules.get("logging")
    if logging is not None:
        logging._handlerList = []  # what the snippet's handlers join
        atexit.register(lambda: logging.shutdown(logging._handlerList))
    if "multiprocessing.util" in sys.modules:
        atexit.register(sys.modules["multiprocessing.util"]._exit_function)
    atexit.register(weakref.finalize._exitfunc)


def _record_reads(root, sink, own):
    """Note every file under ``root`` the snippet opens (audit hook).

    The cache keys a result by the snippet and ``mha_ref``; a data file
    the snippet reads is keyed through this list: the engine hashes
    each file named here, and a cached result whose files changed is run
    again. The list goes to ``sink`` when the snippet ends, if it names
    anything: the snippet itself (``own``), already in the key, is left
    out, so most runs write no file (one file less to create a run).
    """
    prefix = os.path.join(os.path.realpath(root), "")
    own = os.path.abspath(own)
    seen = set()

    def hook(event, args):
        if event != "open" or not args:
            return
        path = args[0]
        if isinstance(path, int):
            return
        try:
            path = os.path.abspath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        if path.startswith(prefix) and path != own:
            seen.add(path[len(prefix) :])

    sys.addaudithook(hook)

    def write():
        if seen:
            with open(sink, "w", encoding="utf-8") as f:
                json.dump(sorted(seen), f)

    return write


def _run_snippet(job, write_reads=None):
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
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    if write_reads is not None:
        try:
            write_reads()
        except OSError:
            code = code or 121
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
