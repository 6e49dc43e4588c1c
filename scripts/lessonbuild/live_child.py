"""The program one live run executes, inside the snippet engine's fork.

``live.py`` runs this file (a link to it, in the run's own folder) as
the job of a fork of the engine's server (``engine/server.py``), so the
run inherits that server's sandbox: the repository read-only, its own
process group, the time limit, everything it started killed afterwards.
Here, before the edited program starts, the run also gets limits of its
own (``resource``): memory (address space above what the fork already
maps), output (the size of any file it writes, its stdout included),
and processes. Then the program runs as ``python snippets/X.py`` would:
``__main__``, ``__file__`` and ``sys.argv[0]`` the snippet's own path,
``sys.path[0]`` its folder, the edited source shown in tracebacks.

Its error, if any, is written as data (``error.json``: the frames in
the program, the exception's last line) for ``live.py`` to name in the
user's terms ("your code, line 3"); stdlib only, as the server is.
"""

import builtins
import errno
import json
import linecache
import os
import resource
import signal
import sys
import traceback
import types


def _limit(which, value):
    """Lower a limit (never raise one above its hard value)."""
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    try:
        resource.setrlimit(which, (value, hard))
    except (ValueError, OSError):
        pass


def _mapped_bytes():
    """The address space this fork already maps (VmSize)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _count_processes():
    """An upper bound of this user's processes, as RLIMIT_NPROC counts
    them: every thread on the machine (/proc/loadavg), one read where a
    walk of /proc would cost milliseconds."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return 4096


def apply_limits(limits):
    """Memory, output and process limits for this run and its children."""
    _limit(resource.RLIMIT_AS, _mapped_bytes() + limits["memory_bytes"])
    # Past the limit a write fails with EFBIG instead of killing the run
    # (SIGXFSZ), so the program ends with a message.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _limit(resource.RLIMIT_FSIZE, limits["output_bytes"])
    _limit(resource.RLIMIT_NPROC, _count_processes() + limits["processes"])


def _write_error(path, exc, filename):
    """The exception as data: frames in the program, then its message."""
    frames = [
        [f.lineno, f.name]
        for f in traceback.extract_tb(exc.__traceback__)
        if f.filename == filename
    ]
    syntax = None
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        syntax = [exc.lineno, exc.offset, exc.msg]
    record = {
        "frames": frames,
        "message": "".join(traceback.format_exception_only(exc)).strip(),
        "syntax": syntax,
        "output_limit": isinstance(exc, OSError) and exc.errno == errno.EFBIG,
    }
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(record, f)
    except OSError:  # a read-only folder, or past the output limit
        traceback.print_exception(exc)
        # live.ERROR_MARK: the record, on stderr's last line.
        sys.stderr.write("@@lesson-live-error@@ " + json.dumps(record) + "\n")


def main(params_path):
    with open(params_path, encoding="utf-8") as f:
        params = json.load(f)
    apply_limits(params["limits"])
    filename, source = params["filename"], params["source"]
    root = params.get("root")
    if root and os.access(root, os.W_OK):
        # The engine could not mount the repository read-only here (no
        # user namespaces): an edited program could change it, so none
        # runs (a build's snippets are still caught by its fingerprint).
        with open(params["error_path"], "w", encoding="utf-8") as f:
            json.dump({"sandbox": False}, f)
        raise SystemExit(1)
    sys.path[0] = os.path.dirname(filename)
    sys.argv = [filename]
    # Tracebacks and inspect show the edited lines, not the file's.
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType("__main__")
    module.__file__ = filename
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        _write_error(params["error_path"], exc, filename)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main(os.path.join(os.path.dirname(__file__), "run.json"))
