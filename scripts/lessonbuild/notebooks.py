"""Turn the committed jupytext scripts into executed ``.ipynb`` notebooks.

The percent-format ``.py`` files under ``notebooks/`` are the source of
truth (they diff and review like code); the ``.ipynb`` students download
is a build product. Execution uses the ``python3`` kernel of the running
interpreter's environment, so notebooks import the same ``mha_ref`` as the
build. A failing cell stops the build with the notebook file, the line in
that file and the cell index, rather than nbclient's bare traceback.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import write_atomic

# jupytext, nbformat and nbclient (half a second) are imported where
# used: the lesson plugin imports this module while MkDocs loads its
# configuration, and the engine's first fork server starts only after.
if TYPE_CHECKING:
    import nbformat
    from nbclient.exceptions import CellExecutionError

__all__ = ["NotebookExecutionError", "execute", "to_ipynb"]

KERNEL = "python3"
#: Every notebook runs on the build's own python3 kernel.
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": KERNEL}
#: No history file; torch starts from a random seed, as in a snippet's
#: run, so a notebook that forgets to seed prints different numbers on
#: its two runs (``_disagreement``).
KERNEL_ARGS = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=import torch as _t; _t.seed(); del _t",
]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# `# --8<-- [start:show]`: where a slide's include begins, noise in a cell.
_SECTION_MARK = re.compile(r"^\s*#\s*-+8<-+\s*\[(?:start|end):[^\]]*\]\s*$")


class NotebookExecutionError(RuntimeError):
    """A notebook cell raised; the message says where and what."""


def to_ipynb(py_path: Path | str) -> nbformat.NotebookNode:
    """Read a jupytext percent script as a valid, unexecuted notebook,
    its first cell the copy of ``mha_ref`` it carries (:func:`setup_cell`).

    The kernelspec is set here, not trusted from the script's header, so
    every notebook runs on the build's own ``python3`` kernel.
    """
    import jupytext
    import nbformat

    path = Path(py_path)
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    root = path.resolve().parent.parent
    at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    offered = {Path(src).name: uri for uri, (src, _) in HOMEWORK.items()}
    if at and path.name in offered:  # a notebook the site offers
        nb.cells[0].source += "\n\n" + download_line(offered[path.name])
    nb.cells.insert(at, nbformat.from_dict(setup_cell(root / "mha_ref")))
    _number_cells(nb.cells)
    nbformat.validate(nb)
    return nb


def download_line(uri: str) -> str:
    """The notebook page's download link (the page sits beside its
    ``.ipynb``); in Jupyter, the notebook's own file."""
    name = Path(uri).name
    return (
        f'<a href="{name}" download>Download this notebook ({name})</a>: '
        "it runs in JupyterLab, VS Code or Colab with torch installed, "
        "nothing else (its first cell unpacks the lesson's `mha_ref`)."
    )


#: The setup cell's first line; Colab shows a cell with a title as a form.
SETUP_TITLE = "# @title Setup: the lesson's mha_ref, carried by this notebook"


def carried_package(package: Path) -> tuple[str, str]:
    """``package``'s ``.py`` files as a zip in base64 (76-character
    lines) and its digest: the same files give the same text, byte for
    byte (fixed dates, sorted names)."""
    import base64
    import hashlib
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(package.glob("*.py")):
            info = zipfile.ZipInfo(
                f"{package.name}/{file.name}", (1980, 1, 1, 0, 0, 0)
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, file.read_bytes())
    data = buffer.getvalue()
    text = base64.b64encode(data).decode("ascii")
    lines = [text[i : i + 76] for i in range(0, len(text), 76)]
    return "\n".join(lines), hashlib.sha256(data).hexdigest()[:12]


def setup_cell(package: Path) -> dict:
    """The first cell of every notebook the site offers: it unpacks the
    copy of ``mha_ref`` the notebook carries into a temporary folder and
    puts it first on ``sys.path``, so the notebook runs wherever torch
    does (JupyterLab, VS Code, Colab), with no clone and no download of
    the lesson's code. The figure cells draw with matplotlib, which a
    bare Jupyter may lack (torch does not need it): the cell installs it
    with pip then, the one package a notebook may fetch. Its source is
    hidden in Jupyter (``source_hidden``)."""
    data, digest = carried_package(package)
    source = f"""{SETUP_TITLE}
# Unpacked into a temporary folder and put first on sys.path, so this
# notebook runs anywhere torch does: no clone, no download.
import base64, io, pathlib, sys, tempfile, zipfile

MHA_REF = \"\"\"
{data}
\"\"\"
folder = pathlib.Path(tempfile.gettempdir()) / "lesson81-mha_ref-{digest}"
if not (folder / "mha_ref" / "__init__.py").is_file():
    unpacked = pathlib.Path(tempfile.mkdtemp(prefix="lesson81-"))
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(MHA_REF)))
    archive.extractall(unpacked)
    try:
        unpacked.rename(folder)
    except OSError:  # another kernel unpacked it first
        folder = unpacked
sys.path.insert(0, str(folder))
print("mha_ref {digest} ready")

# The figures draw with matplotlib: installed here if this Jupyter lacks
# it (Colab and most Jupyter installs have it already).
import importlib.util, subprocess
if importlib.util.find_spec("matplotlib") is None:
    print("installing matplotlib for the figures...")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "matplotlib"],
        check=True,
    )
    importlib.invalidate_caches()"""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"jupyter": {"source_hidden": True}, "tags": ["setup"]},
        "outputs": [],
        "source": source,
    }


#: Calls that only make sense inside the build (they publish tables,
#: values and figures to the site), and the backend that hides figures.
_BUILD_ONLY = ("publish_table", "publish_value", "publish_figure")


def student_code(source: str) -> str:
    """A snippet as a notebook cell: what a student runs, without the
    build's plumbing. The module docstring (it describes the snippet to
    contributors), section markers, ``# noqa`` comments,
    ``matplotlib.use("Agg")`` (figures show inline instead) and the
    ``publish_*`` calls and imports go; ``publish_figure(name, fig)``
    becomes ``plt.show()`` (after ``fig``'s expression, when it is not a
    plain name): the figure shows inline.
    """
    import ast

    tree = ast.parse(source)
    lines = source.splitlines()
    edits: list[tuple[int, int, str | None]] = []  # 0-based, end excl.

    def called(node) -> str:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            if isinstance(func, ast.Name):
                return func.id
            if isinstance(func, ast.Attribute):
                base = func.value
                name = base.id if isinstance(base, ast.Name) else ""
                return f"{name}.{func.attr}"
        return ""

    def visit(body: list) -> None:
        for node in body:
            indent = " " * node.col_offset
            span = (node.lineno - 1, node.end_lineno)
            name = called(node)
            alone = len(body) == 1
            if name.split(".")[-1] in ("publish_table", "publish_value") or (
                name == "matplotlib.use"
            ):
                edits.append((*span, indent + "pass" if alone else None))
            elif name.split(".")[-1] == "publish_figure":
                args = node.value.args
                figure = args[1] if len(args) > 1 else None
                keep = (
                    _dedented(source, figure, node.col_offset)
                    if figure is not None and not isinstance(figure, ast.Name)
                    else None
                )
                # plt.show(): the inline backend displays the figure now
                # (a figure left open is not always shown at the end).
                shown = f"{indent}plt.show()"
                edits.append(
                    (*span, shown if keep is None else f"{keep}\n{shown}")
                )
            elif isinstance(node, ast.ImportFrom) and any(
                alias.name in _BUILD_ONLY for alias in node.names
            ):
                kept = [
                    alias.name
                    + (f" as {alias.asname}" if alias.asname else "")
                    for alias in node.names
                    if alias.name not in _BUILD_ONLY
                ]
                text = (
                    f"{indent}from {'.' * node.level}{node.module or ''} "
                    f"import {', '.join(kept)}"
                    if kept
                    else None
                )
                edits.append((*span, text))
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if (
                    isinstance(inner, list)
                    and inner
                    and isinstance(inner[0], ast.stmt | ast.excepthandler)
                ):
                    visit(inner)

    body = tree.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        edits.append((0, body[0].end_lineno, None))
        body = body[1:]
    visit(body)
    for start, end, text in sorted(edits, reverse=True):
        if text is None:  # the comment just above goes with it
            while start > 0 and lines[start - 1].lstrip().startswith("#"):
                if _SECTION_MARK.match(lines[start - 1]):
                    break
                start -= 1
        lines[start:end] = [] if text is None else text.splitlines()
    kept = [
        _NOQA.sub("", line) for line in lines if not _SECTION_MARK.match(line)
    ]
    code = re.sub(r"\n{3,}", "\n\n\n", "\n".join(kept))
    return code.strip("\n")


def _dedented(source: str, node, indent: int) -> str:
    """``node``'s source, its continuation lines moved left as far as its
    first line moves (from its line's indentation to ``indent``)."""
    import ast

    text = ast.get_source_segment(source, node)
    line = source.splitlines()[node.lineno - 1]
    shift = len(line) - len(line.lstrip()) - indent
    first, *rest = text.splitlines()
    rest = [r[shift:] if r[:shift].isspace() else r for r in rest]
    return "\n".join([" " * indent + first, *rest])


_NOQA = re.compile(r"\s*# noqa(?::[ \w,]*)?$")


def _number_cells(cells) -> None:
    """Ids ``cell-0``, ``cell-1``, ... instead of the random ones jupytext
    and nbformat give: the same source makes the same file, byte for
    byte (a reproducible download; mkdocs-jupyter's cache hits)."""
    for number, cell in enumerate(cells):
        cell.id = f"cell-{number}"


def execute(
    nb: nbformat.NotebookNode,
    timeout: int,
    *,
    source: Path | str | None = None,
    cwd: Path | str | None = None,
    allow_errors: bool = False,
) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in place, on a fresh python3 kernel, and
    return it.

    ``source`` (the ``.py`` it came from) lets an error name the file and
    line; ``cwd`` is the kernel's working directory (default: the
    source's folder, else the current one). With ``allow_errors`` every
    cell runs and errors stay in the outputs (the homework tests read
    them); otherwise the first error raises
    :class:`NotebookExecutionError`.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    if cwd is None:
        cwd = Path(source).parent if source is not None else Path.cwd()
    client = NotebookClient(
        nb,
        timeout=timeout,
        startup_timeout=timeout,
        kernel_name=KERNEL,
        allow_errors=allow_errors,
        extra_arguments=KERNEL_ARGS,
        record_timing=False,  # timestamps would make every build differ
        # One output per stream and cell, not one per flush: where the
        # kernel's flushes fall depends on timing, and the file must not.
        coalesce_streams=True,
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
    # The project's notebooks write the student's my_mha.py beside them:
    # not executed by the build (its kernel sees a read-only repository).
    # Solutions come after every task (the nav's order): the page after
    # a task is the next task, never its answers.
    "notebooks/project.ipynb": ("notebooks/project.py", False),
    "notebooks/homework.ipynb": ("notebooks/homework.py", False),
    "notebooks/project-solutions.ipynb": (
        "notebooks/project_solutions.py",
        False,
    ),
    "notebooks/homework-solutions.ipynb": (
        "notebooks/homework_solutions.py",
        True,
    ),
}
EXECUTE_TIMEOUT = 300
#: Kept out of the search index: the deck notebook repeats every slide's
#: code, and the solutions are answers (search finds lessons, not those).
NOT_SEARCHED = (
    DECK_NOTEBOOK,
    "notebooks/homework-solutions.ipynb",
    "notebooks/project-solutions.ipynb",
)


def deck_notebook(deck, outputs: dict[str, str]) -> nbformat.NotebookNode:
    """The deck as a notebook: per slide with code, its title and lead
    paragraph, then each snippet it runs, in slide order.

    The outputs are the engine's verified stdout of each snippet (the
    very text the slides' Output blocks were checked against), so the
    notebook never shows output the build did not check.
    """
    import nbformat

    cells = [
        _markdown_cell(
            f"# {deck_title(deck)}\n\n"
            "Every code cell is one of the lesson's snippets, in slide "
            "order, with the output the site verified. The first cell "
            "unpacks the copy of `mha_ref` this notebook carries, so it "
            "runs wherever torch and Jupyter do; change a cell and run "
            "it again to see what changes.\n\n" + download_line(DECK_NOTEBOOK)
        ),
        setup_cell(deck.root / "mha_ref"),
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
            _markdown_cell(
                f"## {slide.number}. {slide.title}"
                + (f"\n\n{lead}" if lead else "")
            )
        )
        for rel in snippets:
            source = (deck.root / rel).read_text(encoding="utf-8")
            code = student_code(source)
            stream = {"output_type": "stream", "name": "stdout"}
            cells.append(
                {
                    "cell_type": "code",
                    "execution_count": None,
                    "metadata": {"snippet": rel},
                    "outputs": [{**stream, "text": outputs[rel]}]
                    if outputs[rel]
                    else [],
                    "source": code,
                }
            )
    nb = nbformat.from_dict(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {"kernelspec": dict(KERNELSPEC)},
            "cells": cells,
        }
    )
    _number_cells(nb.cells)
    # Validated once, whole (nbformat's cell constructors validate each
    # cell on its own: 45 ms of every serve rebuild that remade it).
    nbformat.validate(nb)
    return nb


def _markdown_cell(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


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


#: Jupyter's math in a Markdown cell: $$display$$ or $inline$ (no space
#: just inside the dollars, as Jupyter requires).
_JUPYTER_MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$|(?<![\\$])\$(?P<inline>[^\s$](?:[^$]*?[^\s$\\])?)\$",
    re.DOTALL,
)


#: The opening tag of a Markdown cell's rendered HTML, and any div tag.
_MARKDOWN_CELL = re.compile(
    r'<div class="[^"]*\bjp-RenderedMarkdown\b[^"]*"[^>]*>'
)
_DIV_TAG = re.compile(r"<(/?)div\b[^>]*>")


def mark_math(page_html: str) -> str:
    """A notebook page's Jupyter math, wrapped the way arithmatex wraps
    the slides' (``<span class="arithmatex">\\(...\\)</span>``).

    mkdocs-jupyter leaves ``$...$`` in the Markdown cells for MathJax to
    find in the browser; wrapped, the build typesets it with the slides'
    math (``mathrender.py``): no math JavaScript, readable from disk.
    Code and outputs are left alone: only the Markdown cells are parsed
    (a notebook page is up to 1 MB, mostly code and Jupyter's CSS; a
    parse of the whole page cost a second per build).
    """
    if "$" not in page_html:
        return page_html
    parts, done = [], 0
    for start, end in _markdown_cells(page_html):
        inner = page_html[start:end]
        marked = _mark_cell(inner) if "$" in inner else inner
        if marked != inner:
            parts += [page_html[done:start], marked]
            done = end
    return "".join(parts) + page_html[done:] if parts else page_html


def _markdown_cells(page_html: str):
    """(start, end) of each Markdown cell's inner HTML, nested divs kept."""
    for cell in _MARKDOWN_CELL.finditer(page_html):
        depth = 1
        for tag in _DIV_TAG.finditer(page_html, cell.end()):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                yield cell.end(), tag.start()
                break


def _mark_cell(inner: str) -> str:
    """One Markdown cell's HTML with its prose math wrapped."""
    import html

    from bs4 import BeautifulSoup

    soup = BeautifulSoup(inner, "html.parser")
    changed = False
    for text in list(soup.find_all(string=True)):
        if "$" not in text or text.find_parent(("code", "pre")):
            continue
        escaped = html.escape(str(text), quote=False)
        marked = _JUPYTER_MATH.sub(_arithmatex, escaped)
        if marked != escaped:
            parent = text.parent
            text.replace_with(BeautifulSoup(marked, "html.parser"))
            only = [c for c in parent.contents if str(c).strip()]
            if parent.name == "p" and len(only) == 1 and only[0].name:
                parent.replace_with(only[0])  # a paragraph of one $$..$$
            changed = True
    return str(soup) if changed else inner


def _arithmatex(match: re.Match) -> str:
    """One Jupyter formula (its text already HTML-escaped), as arithmatex
    writes it: display math in a ``div``, inline math in a ``span``."""
    if match["display"] is not None:
        tex = match["display"].strip()
        return f'<div class="arithmatex">\\[{tex}\\]</div>'
    return f'<span class="arithmatex">\\({match["inline"]}\\)</span>'


def write_deck_notebook(deck, outputs: dict[str, str], made=None) -> Path:
    """Write the deck notebook under ``OUT_DIR``; returns that folder.

    ``made`` ({file: key}, kept by the plugin across ``mkdocs serve``
    rebuilds): a notebook made from the same slides, snippets and
    outputs is not made again (building and validating it took 50 ms
    of every rebuild).
    """
    import nbformat

    out = deck.root / OUT_DIR
    target = out / DECK_NOTEBOOK
    key = _deck_notebook_key(deck, outputs)
    if made is not None and made.get(target) == key and target.is_file():
        return out
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_if_changed(target, nbformat.writes(deck_notebook(deck, outputs)))
    if made is not None:
        made[target] = key
    return out


def _deck_notebook_key(deck, outputs: dict[str, str]) -> str:
    """What ``deck_notebook`` reads: the slides, the snippets' code and
    their outputs."""
    import hashlib

    h = hashlib.sha256(json.dumps(outputs, sort_keys=True).encode())
    for slide in deck.slides:
        h.update(f"{slide.number}\0{slide.path}\0{slide.text}\0".encode())
    for rel in sorted(outputs):
        try:
            h.update((deck.root / rel).read_bytes())
        except OSError:
            h.update(b"\0missing")
    h.update(carried_package(deck.root / "mha_ref")[1].encode())
    return h.hexdigest()


class Homework:
    """The homework notebooks of one build, executed beside the pages.

    Made once the snippets have run: the starter is written at once; the
    solutions, unless unchanged since they last ran (same ``cache_key``
    -- the engine's key for mha_ref, torch and Python -- and source), run
    as one job on the snippet engine's fork server (``Pool.start``): a
    kernel forked from a process that already imported torch
    (``forked_kernel``), sandboxed and bounded like a snippet, while the
    build renders the pages on the other core. ``wait`` writes the
    executed notebooks and returns the problems found; ``cancel`` stops
    the run, its kernel included.
    """

    def __init__(self, root: Path, cache_key: str, pool):
        import hashlib

        from .engine.preload import preload_plan
        from .engine.runner import Module

        self.root = Path(root)
        self.folder = self.root / OUT_DIR
        self.uris: list[str] = []  # every homework notebook this build has
        self.problems: list = []
        self._jobs: dict[str, tuple[str, str]] = {}  # rel -> (uri, key)
        self._started = None
        sources = []  # of the notebooks to run
        for uri, (rel, run) in HOMEWORK.items():
            source = self.root / rel
            if not source.is_file():
                continue
            self.uris.append(uri)
            target = self.folder / uri
            text = source.read_text(encoding="utf-8")
            key = hashlib.sha256((cache_key + text).encode()).hexdigest()
            stamp = target.with_suffix(".key")
            if stamp.is_file() and target.is_file():
                if stamp.read_text() == key:
                    continue
            if run:
                self._jobs[rel] = (uri, key)
                sources.append(text)
            else:
                _save(self.root, uri, to_ipynb(source), key)
        if self._jobs:
            self._started = pool.start(
                [Module(__name__, tuple(self._jobs))],
                timeout=EXECUTE_TIMEOUT,
                preload=preload_plan(sources),
                key=cache_key,
            )

    @property
    def written(self) -> list[str]:
        """The notebooks already written, with no run to wait for."""
        running = {uri for uri, _ in self._jobs.values()}
        return [uri for uri in self.uris if uri not in running]

    def wait(self) -> list:
        """Block until the notebooks are written; the problems found.

        A notebook the job gave no answer for (it died, timed out, or
        printed something else) is a problem with the job's last lines
        of stderr, never a crash of the build.
        """
        import nbformat

        from .problems import Problem

        started, self._started = self._started, None
        if started is None:
            return self.problems
        (run,) = started.wait()
        done = set()
        for line in run.stdout.splitlines():
            try:
                rel, text, problems = json.loads(line)
            except (ValueError, TypeError):
                continue  # not an answer: a stray print
            if rel in self._jobs and rel not in done:
                done.add(rel)
                self.problems += [Problem(*p) for p in problems]
                if text is not None:
                    uri, key = self._jobs[rel]
                    nb = nbformat.reads(text, as_version=4)
                    _save(self.root, uri, nb, key)
        if run.timed_out:
            why = f"did not finish within {EXECUTE_TIMEOUT} s"
        elif run.failure or run.exit:
            why = f"failed ({run.failure or f'exit {run.exit}'})"
        else:
            why = "gave no answer"
        detail = "\n".join(run.stderr.strip().splitlines()[-15:])
        for rel in self._jobs.keys() - done:
            message = f"executing the notebook {why}"
            self.problems.append(Problem(rel, 1, message, detail))
        return self.problems

    def cancel(self) -> None:
        started, self._started = self._started, None
        if started is not None:
            started.cancel()


def _save(root: Path, uri: str, nb, key: str) -> None:
    """Write one homework notebook, then the stamp that says it is made."""
    import nbformat

    target = root / OUT_DIR / uri
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_if_changed(target, nbformat.writes(nb))
    target.with_suffix(".key").write_text(key)


def _run(rel: str) -> tuple[str | None, list]:
    """Execute ``rel`` (from the root) on a forked kernel: (notebook text
    or None, problems as [path, line, message])."""
    import nbformat

    root = Path.cwd()
    nb = to_ipynb(root / rel)
    try:
        execute(nb, EXECUTE_TIMEOUT, source=rel, cwd=root)
    except NotebookExecutionError as exc:
        head, _, rest = str(exc).partition(": ")
        path, _, line = head.partition(":")
        if line.isdigit():
            return None, [[path, int(line), rest]]
        return None, [[rel, 1, str(exc)]]
    return nbformat.writes(nb), []


def _main(argv: list[str]) -> int:
    """The job ``Homework`` runs on a fork server, from the root: each
    argument a notebook script to execute. Prints one JSON line per
    notebook, ``[rel, notebook text or null, problems]``; the build
    writes the files (the repository is read-only to the job).
    """
    # The answers get the job's stdout; the kernels' own output goes to
    # its stderr, with their inline figures.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for rel in argv:
        text, problems = _run(rel)
        if text is not None and not problems:  # checked like a snippet
            again, problems = _run(rel)
            if again is not None and not problems:
                problems = _disagreement(rel, text, again)
        print(json.dumps([rel, text, problems]), file=answers, flush=True)
    return 0


def _disagreement(rel: str, first: str, second: str) -> list:
    """A problem if two executions of a notebook printed different
    outputs (its kernels start from different random seeds)."""
    import nbformat

    def outputs(text):
        cells = nbformat.reads(text, as_version=4).cells
        return [
            json.dumps(
                [
                    {k: v for k, v in out.items() if k != "execution_count"}
                    for out in cell.get("outputs", [])
                ],
                sort_keys=True,
            )
            for cell in cells
        ]

    for n, (a, b) in enumerate(
        zip(outputs(first), outputs(second), strict=False), 1
    ):
        if a != b:
            return [
                [
                    rel,
                    1,
                    f"cell {n} printed different output in two runs: the "
                    "notebook is nondeterministic (seed torch with "
                    "torch.manual_seed; do not print times, ids or set order)",
                ]
            ]
    return []


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless ``path`` holds it; atomically (no half file)."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    write_atomic(path, text)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
