"""Turn the committed jupytext scripts into executed ``.ipynb`` notebooks.

The percent-format ``.py`` files under ``notebooks/`` are the source of
truth (they diff and review like code); the ``.ipynb`` students download
is a build product. Execution uses the ``python3`` kernel of the running
interpreter's environment, so notebooks import the same ``mha_ref`` as the
build. A failing cell stops the build with the notebook file, the line in
that file and the cell index, rather than nbclient's bare traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

__all__ = ["NotebookExecutionError", "execute", "to_ipynb"]

KERNEL = "python3"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class NotebookExecutionError(RuntimeError):
    """A notebook cell raised; the message says where and what."""


def to_ipynb(py_path: Path | str) -> nbformat.NotebookNode:
    """Read a jupytext percent script as a valid, unexecuted notebook.

    The kernelspec is set here, not trusted from the script's header, so
    every notebook runs on the build's own ``python3`` kernel.
    """
    path = Path(py_path)
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": KERNEL,
    }
    nbformat.validate(nb)
    return nb


def execute(
    nb: nbformat.NotebookNode,
    timeout: int,
    *,
    source: Path | str | None = None,
    cwd: Path | str | None = None,
    allow_errors: bool = False,
) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in place and return it.

    ``source`` (the ``.py`` it came from) lets an error name the file and
    line; ``cwd`` is the kernel's working directory (default: the
    source's folder, else the current one). With ``allow_errors`` every
    cell runs and errors stay in the outputs (the homework tests read
    them); otherwise the first error raises
    :class:`NotebookExecutionError`.
    """
    if cwd is None:
        cwd = Path(source).parent if source is not None else Path.cwd()
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        allow_errors=allow_errors,
        record_timing=False,  # timestamps would make every build differ
        resources={"metadata": {"path": str(cwd)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        raise NotebookExecutionError(_describe(nb, error, source)) from None
    return nb


def _describe(nb, error: CellExecutionError, source) -> str:
    """``file:line: cell N raised Name: value`` for the first error."""
    for index, cell in enumerate(nb.cells):
        failed = [
            out
            for out in cell.get("outputs", [])
            if out.get("output_type") == "error"
        ]
        if not failed:
            continue
        out = failed[0]
        where = f"cell {index}"
        if source is not None:
            line = _source_line(Path(source), cell, out)
            where = (
                f"{source}:{line}: {where}" if line else f"{source}: {where}"
            )
        return f"{where} raised {out['ename']}: {out['evalue']}"
    return f"{source or 'notebook'}: {error}"


def _source_line(path: Path, cell, out) -> int | None:
    """Line in ``path`` of the failing statement, or of the cell's start."""
    text = path.read_text(encoding="utf-8")
    start = text.find(cell.source)
    if start < 0:
        return None
    first = text.count("\n", 0, start) + 1
    count = cell.get("execution_count")
    traceback = _ANSI.sub("", "\n".join(out.get("traceback", [])))
    # IPython names the cell's own frame "Cell In[<count>], line <n>".
    match = re.search(rf"Cell In\[{count}\], line (\d+)", traceback)
    return first + int(match.group(1)) - 1 if match else first
