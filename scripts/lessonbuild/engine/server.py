"""Fork server: import torch and mha_ref once, then fork a child per snippet.

Started by ``runner.py`` as ``python server.py ROOT`` (a plain script,
stdlib only until it preloads, so it never depends on how ``scripts`` is
importable). The protocol is JSON lines: the server reads the list of
modules to preload, writes ``{"ready": ...}``, then reads job batches from
stdin and answers one line per finished job and ``{"done": true}`` per
batch. It exits on EOF.

Each child is what ``python snippets/X.py`` run from the repo root would
be: its own process, ``__main__``, ``sys.argv``, ``sys.path[0]`` the
snippet's folder, cwd the root, the same environment (plus
``MHA_REF_TABLES_FILE``), stdout and stderr to files, torch's default
number of threads. Deliberate differences: the interpreter and the
imports are inherited instead of paid for (``sys.argv[0]`` is the
absolute path, as ``__file__`` is); torch's generator starts from a
random seed instead of torch's fixed start-up seed, so a snippet that
forgets to seed prints different numbers on its two runs and is reported
as nondeterministic; exit handlers registered by the server's imports do
not run in the child.
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
# Seconds between the traceback dump (SIGUSR1) and SIGKILL on a timeout.
DUMP_GRACE = 0.3


def main():
    root = sys.argv[1]
    _die_with_parent()
    preload = json.loads(sys.stdin.readline() or "[]")
    # The protocol gets a private copy of stdout; fd 1 itself goes to
    # stderr, so a stray print during preload cannot corrupt the protocol.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
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
    threads = torch.get_num_threads()
    # Forking after torch's OpenMP pool has started can deadlock the
    # child; with one thread the pool is never started in this process.
    # Children restore the default before running their snippet.
    torch.set_num_threads(1)
    errors = {}
    for name in ["mha_ref", *preload]:
        try:
            importlib.import_module(name)
        except BaseException:
            # The child imports it again and fails like a standalone run.
            errors[name] = traceback.format_exc(limit=-3)
    # Move everything imported so far out of the collector's sight: a
    # child's collection would otherwise touch every object of torch and
    # copy every page (copy-on-write); gc.freeze exists for pre-fork
    # servers like this one. (No gc.collect() first: it takes 0.1 s and
    # would only free a little import-time garbage.)
    gc.freeze()
    mha_ref = sys.modules.get("mha_ref")
    _send(
        proto,
        {
            "ready": True,
            "pid": os.getpid(),
            "torch": torch.__version__,
            "mha_ref": list(getattr(mha_ref, "__path__", []) or []),
            "preload_errors": errors,
        },
    )
    for line in sys.stdin:
        batch = json.loads(line)
        _run_batch(proto, root, batch, threads)
        _send(proto, {"done": True})


def _die_with_parent():
    """Be killed when the parent dies (Linux), so nothing runs on
    orphaned: the engine killed by Ctrl-C takes its servers along, and a
    server takes its children (they have their own process groups, so
    the terminal's SIGINT does not reach them)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl
        os._exit(1)


def _send(proto, message):
    proto.write(json.dumps(message) + "\n")
    proto.flush()


def _run_batch(proto, root, batch, threads):
    queue = list(batch["jobs"])
    limit = max(1, int(batch["concurrency"]))
    timeout = float(batch["timeout"])
    running = {}  # pid -> [job, start, deadline, pidfd]
    while queue or running:
        while queue and len(running) < limit:
            job = queue.pop(0)
            pid = _fork_child(root, job, threads, proto)
            start = time.monotonic()
            try:
                pidfd = os.pidfd_open(pid)
            except (AttributeError, OSError):
                pidfd = None
            running[pid] = [job, start, start + timeout, pidfd]
        now = time.monotonic()
        wait = max(0.0, min(r[2] for r in running.values()) - now)
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
            _send(
                proto,
                {
                    "id": job["id"],
                    "exit": os.waitstatus_to_exitcode(status),
                    "timed_out": timed_out,
                    "seconds": time.monotonic() - start,
                },
            )


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
        except BaseException:
            os.write(2, traceback.format_exc().encode())
            os._exit(71)
        code = _run_snippet(job["path"])
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
    os.chdir(root)
    sys.argv = [job["path"]]
    sys.path[0] = os.path.dirname(job["path"])
    _own_exit_handlers()
    faulthandler.enable(file=sys.stderr)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    gc.enable()  # as in a standalone run (the server turned it off)
    import torch

    torch.set_num_threads(threads)
    torch.seed()
    # Python reseeds `random` after a fork; numpy's global state is not
    # reseeded, so every child would share the server's numbers.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


def _own_exit_handlers():
    """Keep the exit handlers a snippet's own resources need, not ours.

    The inherited ones belong to the server's imports: running them in
    every child is slow (torch's weakref finalizers take ~40 ms after a
    fork) and could release what the server still holds. A snippet's own
    handlers, temporary folders (weakref.finalize), logging and
    multiprocessing still run at its exit, as in a standalone run.
    """
    atexit._clear()
    registry = weakref.finalize._registry
    for info in list(registry.values()):
        info.atexit = False
    atexit.register(weakref.finalize._exitfunc)
    for module, name in (
        ("multiprocessing.util", "_exit_function"),
        ("logging", "shutdown"),
    ):
        if module in sys.modules:
            atexit.register(getattr(sys.modules[module], name))


def _run_snippet(path):
    """Run the snippet as __main__; return the exit status Python would."""
    code = 0
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:
        _print_exception(exc, path)
        code = 1
    try:
        atexit._run_exitfuncs()
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
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


if __name__ == "__main__":
    main()
