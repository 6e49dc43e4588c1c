"""The program a live run executes, as a job of the engine's fork server
(so with its sandbox and live.py's limits): the edited source runs as
``python snippets/X.py`` would, shown in tracebacks; its error goes to
live.py as data on stderr's last line. Stdlib only, as the server is.
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
from collections import UserDict

ERROR_MARK = "@@lesson-live-error@@ "


def _report(record):
    sys.stderr.write(ERROR_MARK + json.dumps(record) + "\n")


class Namespace(UserDict):
    """The program's locals: its module's dict, written through, and a
    method the reader edited made its class's.

    A method shown alone (``forward`` of mha_ref/mha.py) runs after the
    whole module, so its edited ``def`` made a function beside the class,
    which still ran the original. exec stores names through
    ``__setitem__`` of locals that are not a dict: a function defined at
    or after the edit's first line whose first parameter is ``self`` is
    also set on the program's classes that define that name, compiled
    again inside a class of that name so that ``super()`` and
    ``self.__x`` work as in the file."""

    def __init__(self, module, first, source):
        super().__init__()
        self.data = vars(module)  # written through
        self.first, self.source = first, source
        self.tree = None  # the program's syntax tree, once a method needs it

    def __setitem__(self, name, value):
        self.data[name] = value
        code = getattr(value, "__code__", None)
        if not (
            isinstance(value, types.FunctionType)
            and code.co_filename == self.data["__file__"]
            and code.co_firstlineno >= self.first
            and code.co_varnames[: code.co_argcount][:1] == ("self",)
        ):
            return
        for cls in list(self.data.values()):
            if (
                isinstance(cls, type)
                and cls.__module__ == self.data["__name__"]
                and name in vars(cls)
            ):
                setattr(cls, name, self.method(value, cls))

    def method(self, func, cls):
        """``func`` compiled in a class body named as ``cls``, its
        ``__class__`` cell ``cls`` (``func`` itself if decorated)."""
        if self.tree is None:
            self.tree = ast.parse(self.source, self.data["__file__"])
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
        # Not mounted read-only (no user namespaces): nothing runs.
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
        # A module of a package: its relative imports resolve.
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
        # Only the record: live.py names the lines as the reader sees them.
        syntax = None
        if isinstance(exc, SyntaxError) and exc.filename == filename:
            # (IndentationError and TabError keep their own names)
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
