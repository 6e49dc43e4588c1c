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
#: Every notebook runs on the build's own python3 kernel.
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": KERNEL}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# `# --8<-- [start:show]`: where a slide's include begins, noise in a cell.
_SECTION_MARK = re.compile(r"^\s*#\s*-+8<-+\s*\[(?:start|end):[^\]]*\]\s*$")


class NotebookExecutionError(RuntimeError):
    """A notebook cell raised; the message says where and what."""


def to_ipynb(py_path: Path | str) -> nbformat.NotebookNode:
    """Read a jupytext percent script as a valid, unexecuted notebook.

    The kernelspec is set here, not trusted from the script's header, so
    every notebook runs on the build's own ``python3`` kernel.
    """
    path = Path(py_path)
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
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


# --- the build's notebooks ------------------------------------------------

#: Where the build writes the notebooks it makes (under the root).
OUT_DIR = Path(".cache") / "notebooks"
#: The deck as a notebook, and the homework (starter, then solutions).
DECK_NOTEBOOK = "notebooks/lesson-81.ipynb"
HOMEWORK = {
    "notebooks/homework.ipynb": ("notebooks/homework.py", False),
    "notebooks/homework-solutions.ipynb": (
        "notebooks/homework_solutions.py",
        True,
    ),
}
EXECUTE_TIMEOUT = 300
#: Kept out of the search index: the deck notebook repeats every slide's
#: code, and the solutions are answers (search finds lessons, not those).
NOT_SEARCHED = (DECK_NOTEBOOK, "notebooks/homework-solutions.ipynb")


def deck_notebook(deck, outputs: dict[str, str]) -> nbformat.NotebookNode:
    """The deck as a notebook: per slide with code, its title and lead
    paragraph, then each snippet it runs, in slide order.

    The outputs are the engine's verified stdout of each snippet (the
    very text the slides' Output blocks were checked against), so the
    notebook never shows output the build did not check.
    """
    from nbformat import v4

    cells = [
        v4.new_markdown_cell(
            f"# {deck_title(deck)}\n\n"
            "Every code cell is one of the lesson's snippets, in slide "
            "order, with the output the site verified. Run it from a "
            "clone of the repository (`make serve` installs everything), "
            "so that `import mha_ref` works; change a cell and run it "
            "again to see what changes."
        )
    ]
    seen = set()
    for slide in deck.slides:
        snippets = [
            inc.path
            for inc in slide.includes
            if inc.path.startswith("snippets/") and inc.path in outputs
        ]
        snippets = [s for s in dict.fromkeys(snippets) if s not in seen]
        if not snippets:
            continue
        seen.update(snippets)
        lead = lead_paragraph(slide)
        cells.append(
            v4.new_markdown_cell(
                f"## {slide.number}. {slide.title}"
                + (f"\n\n{lead}" if lead else "")
            )
        )
        for rel in snippets:
            source = (deck.root / rel).read_text(encoding="utf-8")
            code = "\n".join(
                line
                for line in source.rstrip().splitlines()
                if not _SECTION_MARK.match(line)
            )
            cell = v4.new_code_cell(code, metadata={"snippet": rel})
            if outputs[rel]:
                cell.outputs = [
                    v4.new_output("stream", name="stdout", text=outputs[rel])
                ]
            cells.append(cell)
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.validate(nb)
    return nb


def deck_title(deck) -> str:
    return deck.slides[0].title if deck.slides else "The lesson"


def lead_paragraph(slide) -> str:
    """The first plain paragraph after the slide's heading.

    Lines inside any fence (code, Output blocks, exercises, whose answers
    must not leak into the notebook or its search entry), display math,
    admonitions, tables and macro calls are never part of it.
    """
    fenced = set()
    for fence in slide.fences:
        last = fence.end if fence.end is not None else len(slide.lines)
        fenced.update(range(fence.start, last + 1))
    paragraph: list[str] = []
    in_display = False  # inside a \[ ... \] block
    for i in range(slide.body_line - 1, len(slide.lines)):
        line = slide.lines[i].rstrip("\r\n")
        if line.lstrip().startswith("\\["):
            in_display = "\\]" not in line
            skip = True
        elif in_display:
            in_display = "\\]" not in line
            skip = True
        else:
            skip = i in fenced or line.startswith(
                ("#", "!!!", "???", "|", "{{", "<", " ", "\t")
            )
        if skip or not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line)
    # Jupyter reads math between dollars, the site between \( and \).
    text = "\n".join(paragraph)
    return text.replace("\\(", "$").replace("\\)", "$")


def write_notebooks(deck, outputs: dict[str, str], cache_key: str):
    """Write the deck and homework notebooks under ``OUT_DIR``.

    Returns ``(folder, [src_uri, ...], problems)``. Homework solutions
    are executed once per ``cache_key`` (the engine's key for mha_ref,
    torch and Python) and source: an unchanged notebook is not re-run.
    """
    import hashlib

    from .problems import Problem

    out = deck.root / OUT_DIR
    problems: list[Problem] = []
    written = []
    target = out / DECK_NOTEBOOK
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_if_changed(target, nbformat.writes(deck_notebook(deck, outputs)))
    written.append(DECK_NOTEBOOK)
    for uri, (rel, run) in HOMEWORK.items():
        source = deck.root / rel
        if not source.is_file():
            continue
        target = out / uri
        key = hashlib.sha256(
            (cache_key + source.read_text(encoding="utf-8")).encode()
        ).hexdigest()
        stamp = target.with_suffix(".key")
        if target.is_file() and stamp.is_file() and stamp.read_text() == key:
            written.append(uri)
            continue
        nb = to_ipynb(source)
        if run:
            try:
                execute(nb, EXECUTE_TIMEOUT, source=rel, cwd=deck.root)
            except NotebookExecutionError as exc:
                head, _, rest = str(exc).partition(": ")
                path, _, line = head.partition(":")
                problems.append(
                    Problem(
                        path if line.isdigit() else rel,
                        int(line) if line.isdigit() else 1,
                        rest if line.isdigit() else str(exc),
                    )
                )
                continue
        _write_if_changed(target, nbformat.writes(nb))
        stamp.write_text(key)
        written.append(uri)
    return out, written, problems


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
