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

import ast
import builtins
import errno
import json
import linecache
import os
import sys
import traceback
import types
from collections.abc import MutableMapping

#: What starts the error record's line on stderr (live.py reads it).
ERROR_MARK = "@@lesson-live-error@@ "


def _report(record):
    sys.stderr.write(ERROR_MARK + json.dumps(record) + "\n")


class Namespace(MutableMapping):
    """The program's locals: its module's dict, written through, and a
    method the reader edited made its class's.

    A block of the package shows a method alone (mha_ref/mha.py's
    ``forward``, slide 47; ``__init__``, slide 45) and runs after the
    whole module, so the edited ``def`` made a function beside the
    class: ``MultiHeadAttention(8, 2)`` still ran the original (a tester's
    ``raise RuntimeError('boom')`` in ``forward`` never raised). exec
    stores a name through ``__setitem__`` of locals that are not a dict,
    so a function defined at or after the edit's first line (``first``)
    whose first parameter is ``self`` is, as it is defined, also set on
    the program's own classes that define a method of that name: a call
    the reader adds right after it runs the edit. It is compiled again
    from its lines inside a class of that name, as the file has it, so
    that ``super()`` finds its class (outside a class,
    ``super().__init__()`` raised "__class__ cell not found") and
    ``self.__x`` is the class's private name."""

    def __init__(self, module, first, source):
        self.names, self.first, self.source = vars(module), first, source
        self.tree = None  # the program's syntax tree, once a method needs it

    def __getitem__(self, name):
        return self.names[name]

    def __delitem__(self, name):
        del self.names[name]

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)

    def __setitem__(self, name, value):
        self.names[name] = value
        code = getattr(value, "__code__", None)
        if not (
            isinstance(value, types.FunctionType)
            and code.co_filename == self.names["__file__"]
            and code.co_firstlineno >= self.first
            and code.co_varnames[: code.co_argcount][:1] == ("self",)
        ):
            return
        for cls in list(self.names.values()):
            if (
                isinstance(cls, type)
                and cls.__module__ == self.names["__name__"]
                and name in vars(cls)
            ):
                setattr(cls, name, self.method(value, cls))

    def method(self, func, cls):
        """``func`` compiled in a class body named as ``cls``, its
        ``__class__`` cell ``cls`` (``func`` itself if decorated)."""
        if self.tree is None:
            self.tree = ast.parse(self.source, self.names["__file__"])
        line = func.__code__.co_firstlineno  # (a decorator's, if any)
        node = next(
            (
                node
                for node in ast.walk(self.tree)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno == line
                and not node.decorator_list
            ),
            None,
        )
        if node is None:
            return func
        body = ast.ClassDef(
            cls.__name__, bases=[], keywords=[], body=[node], decorator_list=[]
        )
        tree = ast.fix_missing_locations(
            ast.Module([ast.copy_location(body, node)], type_ignores=[])
        )
        codes = compile(tree, func.__code__.co_filename, "exec").co_consts
        body = next(k for k in codes if isinstance(k, types.CodeType))
        code = next(
            k
            for k in body.co_consts
            if isinstance(k, types.CodeType) and k.co_name == func.__name__
        )
        if set(code.co_freevars) - {"__class__"}:
            return func
        cells = tuple(types.CellType(cls) for _ in code.co_freevars)
        new = types.FunctionType(
            code, func.__globals__, func.__name__, func.__defaults__, cells
        )
        new.__kwdefaults__ = func.__kwdefaults__
        new.__annotations__ = func.__annotations__
        new.__dict__.update(vars(func))
        new.__qualname__ = f"{cls.__qualname__}.{func.__name__}"
        return new


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
        code = compile(source, filename, "exec")
        names = Namespace(module, params["first"], source)
        exec(code, module.__dict__, names)
    except SystemExit:
        raise
    except BaseException as exc:
        # No traceback on stderr: the record below is shown as the reader
        # sees the code (a second, raw one named the run's own folder and
        # other line numbers).
        syntax = None
        if isinstance(exc, SyntaxError) and exc.filename == filename:
            # (IndentationError, TabError: the box named each SyntaxError)
            syntax = [exc.lineno, exc.offset, exc.msg, type(exc).__name__]
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
