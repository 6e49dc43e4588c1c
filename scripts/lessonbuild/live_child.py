"""The program one live run executes, inside the snippet engine's fork.

``live.py`` runs this file as a job of the engine's server, so the run
inherits its sandbox (the repository read-only, its own process group,
the time limit, its children killed afterwards) and live.py's limits
(memory, the size of any file it writes, stdout included, processes).
Here the edited program runs as ``python snippets/X.py`` would, the
edited source shown in tracebacks. Its error goes to live.py as data,
on stderr's last line (the run's folder is read-only), to be named in
the reader's terms. Stdlib only, as the server is.
"""

import builtins
import errno
import json
import linecache
import os
import sys
import traceback
import types

#: What starts the error record's line on stderr (live.py reads it).
ERROR_MARK = "@@lesson-live-error@@ "


def _report(record):
    sys.stderr.write(ERROR_MARK + json.dumps(record) + "\n")


def main(params_path):
    with open(params_path, encoding="utf-8") as f:
        params = json.load(f)
    filename, source = params["filename"], params["source"]
    if os.access(params["root"], os.W_OK):
        # The engine could not mount the repository read-only (no user
        # namespaces): an edited program could change it, so none runs.
        _report({"sandbox": False})
        raise SystemExit(1)
    sys.path[0] = folder = os.path.dirname(filename)
    sys.argv = [filename]
    # Tracebacks and inspect show the edited lines, not the file's.
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType("__main__")
    module.__file__ = filename
    module.__builtins__ = builtins
    if os.path.isfile(os.path.join(folder, "__init__.py")):
        # A module of a package (mha_ref/mha.py): its relative imports
        # resolve as when the package imports it.
        module.__package__ = os.path.basename(folder)
        sys.path[0] = os.path.dirname(folder)
    sys.modules["__main__"] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        # No traceback on stderr: the record below is shown as the reader
        # sees the code (a second, raw one named the run's own folder and
        # other line numbers).
        syntax = None
        if isinstance(exc, SyntaxError) and exc.filename == filename:
            syntax = [exc.lineno, exc.offset, exc.msg]
        _report(
            {
                "frames": [
                    [f.lineno, f.name]
                    for f in traceback.extract_tb(exc.__traceback__)
                    if f.filename == filename
                ],
                "message": "".join(
                    traceback.format_exception_only(exc)
                ).strip(),
                "syntax": syntax,
                "output_limit": isinstance(exc, OSError)
                and exc.errno == errno.EFBIG,
            }
        )
        raise SystemExit(1) from None


if __name__ == "__main__":
    main(os.path.join(os.path.dirname(__file__), "run.json"))
