"""The notebooks the site offers: the deck as a notebook, and the homework.

The homework's sources are percent-format jupytext scripts under
``notebooks/`` (they review like code); each ``.ipynb`` is a build
product carrying ``mha_ref`` in a hidden first cell, so it runs wherever
torch does. The solutions run twice, as a job of the snippet engine
(``Homework``); a failing cell stops the build at its file and line.
"""

from __future__ import annotations

import ast
import base64
import ctypes
import functools
import hashlib
import html
import io
import itertools
import json
import os
import re
import runpy
import shutil
import signal
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

from .atomic import write_atomic

# jupytext, nbformat and nbclient (half a second) are imported where
# used: MkDocs imports this module while loading its configuration.

#: Where the build writes the notebooks it makes (under the root).
OUT_DIR = Path(".cache") / "notebooks"
DECK_NOTEBOOK = "notebooks/lesson-81.ipynb"
#: The lesson's package as a download, for copied code (index.md links it).
PACKAGE_ZIP = "mha_ref.zip"
#: The homework: each task, then its answers.
HOMEWORK = {
    "notebooks/project.ipynb": "notebooks/project.py",
    "notebooks/homework.ipynb": "notebooks/homework.py",
    "notebooks/project-solutions.ipynb": "notebooks/project_solutions.py",
    "notebooks/homework-solutions.ipynb": "notebooks/homework_solutions.py",
}
#: What the build executes. Not the project's notebooks: they write the
#: student's my_mha.py beside them, in a repository read-only to kernels.
EXECUTED = ("notebooks/homework_solutions.py",)
#: Out of the nav ("Next" from the last task is no answer key) and, with
#: the deck notebook (every slide's code again), out of the search index.
SOLUTIONS = tuple(uri for uri in HOMEWORK if uri.endswith("-solutions.ipynb"))
NOT_SEARCHED = (DECK_NOTEBOOK, *SOLUTIONS)
EXECUTE_TIMEOUT = 300

KERNEL = "python3"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": KERNEL}
#: No history file; torch from a random seed, as a snippet's run, so a
#: notebook that forgets to seed differs between its two runs.
KERNEL_ARGS = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.exec_lines=import torch as _t; _t.seed(); del _t",
]
#: Calls that only make sense inside the build: they publish to the site.
_BUILD_ONLY = ("publish_table", "publish_value", "publish_figure")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NOQA = re.compile(r"\s*# noqa(?::[ \w,]*)?$")
# `# --8<-- [start:show]`: where a slide's include begins, noise in a cell.
_SECTION_MARK = re.compile(r"^\s*#\s*-+8<-+\s*\[(?:start|end):[^\]]*\]\s*$")
#: A comment line that goes with the statement below it (not a marker).
_COMMENT = re.compile(r"(?!" + _SECTION_MARK.pattern + r")\s*#")


# --- notebooks from their sources --------------------------------------------


def to_ipynb(py_path: Path | str):
    """A jupytext percent script as a valid, unexecuted notebook, its
    first cell ``setup_cell``; the kernelspec set here, never trusted
    from the script's header."""
    import jupytext
    import nbformat

    path = Path(py_path)
    nb = jupytext.read(path, fmt="py:percent")
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
    offered = {Path(src).name: uri for uri, src in HOMEWORK.items()}
    # Only a notebook that draws installs matplotlib.
    figures = any("matplotlib" in cell.source for cell in nb.cells)
    if at and path.name in offered:
        line = download_line(offered[path.name], figures=figures)
        nb.cells[0].source += "\n\n" + line
    package = path.resolve().parent.parent / "mha_ref"
    nb.cells.insert(at, nbformat.from_dict(setup_cell(package, figures)))
    for number, cell in enumerate(nb.cells):  # not random: reproducible
        cell.id = f"cell-{number}"
    nbformat.validate(nb)
    return nb


def download_line(uri: str, figures: bool = True) -> str:
    """The notebook page's download link (the page sits beside its
    ``.ipynb``); in Jupyter, the notebook's own file."""
    name = Path(uri).name
    installs = ", and installs matplotlib for the figures where it is missing"
    return (
        f'<a href="{name}" download>Download this notebook ({name})</a>: '
        "it runs in JupyterLab, VS Code or Colab with torch installed "
        f"(its first cell unpacks the lesson's `mha_ref`"
        f"{installs if figures else ''})."
    )


def package_zip(package: Path) -> bytes:
    """``package``'s ``.py`` files as a zip of ``<name>/<file>.py``, the
    same bytes for the same files (fixed dates, sorted names)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(package.glob("*.py")):
            name = f"{package.name}/{file.name}"
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            archive.writestr(info, file.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def setup_cell(package: Path, figures: bool = True) -> dict:
    """Every offered notebook's first cell, hidden in Jupyter: it unpacks
    the ``package_zip`` it carries (base64) first on ``sys.path`` and,
    with ``figures``, installs matplotlib where it is missing."""
    zipped = package_zip(package)
    data = base64.encodebytes(zipped).decode("ascii").rstrip("\n")
    digest = hashlib.sha256(zipped).hexdigest()[:12]
    # "@title": Colab shows the cell as a form.
    source = f"""# @title Setup: the lesson's mha_ref, carried by this notebook
# Unpacked into a temporary folder and put first on sys.path, so this
# notebook runs anywhere torch does: no clone, no download.
import base64, io, os, pathlib, stat, sys, tempfile, zipfile

MHA_REF = \"\"\"
{data}
\"\"\"
folder = pathlib.Path(tempfile.gettempdir()) / "lesson81-mha_ref-{digest}"


def _ours(path):
    \"\"\"A folder of this user's that no one else may write into: the
    temporary folder is every user's, and a folder planted there under
    this name would come first on sys.path.\"\"\"
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if not hasattr(os, "getuid"):  # Windows: the temporary folder is yours
        return stat.S_ISDIR(info.st_mode)
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
            and not info.st_mode & 0o022)


if not (_ours(folder) and (folder / "mha_ref" / "__init__.py").is_file()):
    unpacked = pathlib.Path(tempfile.mkdtemp(prefix="lesson81-"))
    archive = zipfile.ZipFile(io.BytesIO(base64.b64decode(MHA_REF)))
    archive.extractall(unpacked)
    try:
        unpacked.rename(folder)
    except OSError:  # another kernel unpacked it first
        folder = unpacked
sys.path.insert(0, str(folder))
print("mha_ref {digest} ready")
"""
    if figures:
        source += """
# The figures draw with matplotlib: installed here if this Jupyter lacks
# it (Colab and most Jupyter installs have it already). Where it cannot
# be (no network), every cell but the figures' still runs.
import importlib.util, subprocess
if importlib.util.find_spec("matplotlib") is None:
    print("installing matplotlib for the figures...")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "matplotlib"]
    )
    importlib.invalidate_caches()
    if installed.returncode != 0:
        print("matplotlib could not be installed, so the figure cells "
              "will fail; the other cells run. Install it "
              "(pip install matplotlib), then run this notebook again.")"""
    hidden = {"jupyter": {"source_hidden": True}, "tags": ["setup"]}
    return _code_cell(source.rstrip("\n"), [], metadata=hidden)


@functools.lru_cache(maxsize=1024)  # serve rewrites the deck's notebook
def student_code(source: str) -> str:
    """A snippet as a student's cell, without the build's plumbing: the
    docstring, section markers, ``# noqa``, ``matplotlib.use`` and the
    ``publish_*`` calls and imports go (with the comment above each);
    ``publish_figure(name, fig)`` becomes ``plt.show()``, after ``fig``
    when it is an expression, so the figure shows inline."""
    tree = ast.parse(source)
    lines = source.splitlines()
    edits: list[tuple[int, int, str | None]] = []  # 0-based, end excl.
    if ast.get_docstring(tree, clean=False) is not None:
        edits.append((0, tree.body[0].end_lineno, None))
    for node, block in _statements(tree):
        indent = " " * node.col_offset
        span = (node.lineno - 1, node.end_lineno)
        call = node.value if isinstance(node, ast.Expr) else None
        name = ast.unparse(call.func) if isinstance(call, ast.Call) else ""
        called = name.split(".")[-1]
        if called == "publish_figure":
            # plt.show(): the inline backend displays the figure now (a
            # figure left open is not always shown at the end).
            shown = f"{indent}plt.show()"
            args = node.value.args
            if len(args) > 1 and not isinstance(args[1], ast.Name):
                drawn = _dedented(source, args[1], node.col_offset)
                shown = f"{drawn}\n{shown}"
            edits.append((*span, shown))
        elif called in _BUILD_ONLY or name == "matplotlib.use":
            edits.append((*span, indent + "pass" if len(block) == 1 else None))
        elif isinstance(node, ast.ImportFrom) and any(
            alias.name in _BUILD_ONLY for alias in node.names
        ):
            node.names = [a for a in node.names if a.name not in _BUILD_ONLY]
            text = indent + ast.unparse(node) if node.names else None
            edits.append((*span, text))
    for start, end, text in sorted(edits, reverse=True):
        while text is None and start > 0 and _COMMENT.match(lines[start - 1]):
            start -= 1  # the comment just above goes with it
        lines[start:end] = [] if text is None else text.splitlines()
    kept = [
        _NOQA.sub("", line) for line in lines if not _SECTION_MARK.match(line)
    ]
    return re.sub(r"\n{3,}", "\n\n\n", "\n".join(kept)).strip("\n")


def _statements(tree):
    """Every statement, with the block (list of statements) it is in."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                yield from ((statement, block) for statement in block)


def _dedented(source: str, node, indent: int) -> str:
    """``node``'s source, its continuation lines moved left as far as its
    first line moves (from its line's indentation to ``indent``)."""
    text = ast.get_source_segment(source, node)
    line = source.splitlines()[node.lineno - 1]
    shift = len(line) - len(line.lstrip()) - indent
    first, *rest = text.splitlines()
    rest = [r[shift:] if r[:shift].isspace() else r for r in rest]
    return "\n".join([" " * indent + first, *rest])


# --- executing a notebook ----------------------------------------------------


class NotebookExecutionError(RuntimeError):
    """A notebook cell raised: ``path``, ``line`` (or None) and what."""

    def __init__(self, path, line: int | None, message: str):
        where = f"{path}:{line}" if line else f"{path}"
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.message = str(path), line, message


def execute(nb, timeout: int, *, source, allow_errors=False, km=None):
    """Run every cell of ``nb`` in place and return it. A fresh kernel
    (unless ``km`` is one already started) runs in the folder of
    ``source``, the ``.py`` an error is reported in; the first error
    raises ``NotebookExecutionError`` unless ``allow_errors``."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        startup_timeout=timeout,
        kernel_name=KERNEL,
        extra_arguments=KERNEL_ARGS,
        allow_errors=allow_errors,
        # Reproducible files: no timestamps, and one output per stream
        # and cell (where the kernel's flushes fall depends on timing).
        record_timing=False,
        coalesce_streams=True,
        resources={"metadata": {"path": str(Path(source).parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        raise _failure(nb, error, source) from None
    return nb


def _failure(nb, error, source) -> NotebookExecutionError:
    """The first cell that raised, at the line of ``source`` of the
    failing statement (or of the cell's start)."""
    raised = (
        (index, cell, out)
        for index, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    )
    if not (found := next(raised, None)):
        return NotebookExecutionError(source, None, str(error))
    index, cell, out = found
    message = f"cell {index} raised {out['ename']}: {out['evalue']}"
    text = Path(source).read_text(encoding="utf-8")
    if (start := text.find(cell.source)) < 0:
        return NotebookExecutionError(source, None, message)
    trace = _ANSI.sub("", "\n".join(out.get("traceback", [])))
    # IPython names the cell's own frame "Cell In[<count>], line <n>".
    count = cell.get("execution_count")
    match = re.search(rf"Cell In\[{count}\], line (\d+)", trace)
    line = text.count("\n", 0, start) + (int(match[1]) if match else 1)
    return NotebookExecutionError(source, line, message)


# --- the deck as a notebook --------------------------------------------------

_DECK_INTRO = (
    "Every code cell is one of the lesson's snippets, in slide order, with "
    "the output the site verified (except the cells that show an exercise's "
    "answer, in their code or their run: each says so first, read and run "
    "those once you have answered). The first cell unpacks the copy of "
    "`mha_ref` this notebook carries, so it runs wherever torch and Jupyter "
    "do; change a cell and run it again to see what changes.\n\n"
)


def deck_notebook(deck, outputs: dict[str, str]):
    """The deck as a notebook: per slide with code, its title and lead
    paragraph, then each snippet it runs, in slide order, with the very
    stdout the slides' Output blocks were verified against."""
    import nbformat

    # Ids name the slide, not positions: a cell added or removed leaves
    # the other slides' cells as they were (``make site-diff`` too).
    intro = f"# {deck.slides[0].title}\n\n{_DECK_INTRO}"
    cells = [
        _markdown_cell("lesson", intro + download_line(DECK_NOTEBOOK)),
        setup_cell(deck.root / "mha_ref") | {"id": "setup"},
    ]
    seen = set()
    for slide in deck.slides:
        snippets = [
            s
            for s in dict.fromkeys(inc.path for inc in slide.includes)
            if s.startswith("snippets/") and s in outputs and s not in seen
        ]
        if not snippets:
            continue
        seen.update(snippets)
        lead, cell_id = lead_paragraph(slide), f"slide-{slide.number}"
        title = f"## {slide.number}. {slide.title}"
        text = f"{title}\n\n{lead}" if lead else title
        cells.append(_markdown_cell(cell_id, text))
        for k, rel in enumerate(snippets, 1):
            own_id, text = f"{cell_id}-{k}", outputs[rel]
            out = {"output_type": "stream", "name": "stdout", "text": text}
            outs, metadata = [out] if text else [], {"snippet": rel}
            # Code the page locks until its exercise is tried keeps no
            # output here and says so first: its run shows the answer, or
            # its code computes it (a variants table, which prints none).
            if _locked(slide, rel):
                outs = []
                metadata["after_exercise"] = True
                first = (
                    f"*Answer slide {slide.number}'s exercise first: this "
                    f"cell shows its answer, in its code or its run.*"
                    if slide.exercises
                    # A reference kept for after the project (slide 51)
                    else f"*Try it yourself first: this cell is slide "
                    f"{slide.number}'s reference, and its run shows the "
                    f"answer.*"
                )
                cells.append(_markdown_cell(f"{own_id}-first", first))
            code = student_code((deck.root / rel).read_text(encoding="utf-8"))
            cells.append(_code_cell(code, outs, id=own_id, metadata=metadata))
    # Validated once, whole: the cell constructors would validate each.
    metadata = {"kernelspec": dict(KERNELSPEC)}
    nb = nbformat.v4.new_notebook(metadata=metadata, cells=cells)
    return nbformat.from_dict(nb)


#: A fold the page keeps closed until the exercise above it is tried.
_LOCKED_FOLD = re.compile(r"\?\?\?\+?\s+(?:verify|reference)\b")


def _locked(slide, rel: str) -> bool:
    """Whether every include of ``rel`` on ``slide`` sits in a Verify or
    reference fold (the fold: the nearest line above it not indented)."""

    def in_fold(line: int) -> bool:
        for text in reversed(slide.lines[: line - 1]):
            if text.strip() and not text[0].isspace():
                return bool(_LOCKED_FOLD.match(text))
        return False

    lines = [i.line for i in slide.includes if i.path == rel]
    return bool(lines) and all(in_fold(n) for n in lines)


def _markdown_cell(cell_id: str, source: str) -> dict:
    return dict(id=cell_id, cell_type="markdown", metadata={}, source=source)


def _code_cell(source: str, outputs: list, **fields) -> dict:
    """A code cell not run yet, as nbformat's JSON."""
    cell = dict(cell_type="code", execution_count=None, metadata={})
    return cell | dict(outputs=outputs, source=source, **fields)


def lead_paragraph(slide) -> str:
    """The first plain paragraph after the slide's heading: never a line
    of a fence (code, Output blocks, exercises, whose answers must not
    leak), display math, an admonition, a table or a macro call."""
    fenced = set()
    for fence in slide.fences:
        last = fence.end if fence.end is not None else len(slide.lines)
        fenced.update(range(fence.start, last + 1))
    not_prose = ("#", "!!!", "???", "|", "{{", "<", " ", "\t")
    paragraph: list[str] = []
    in_display = False  # inside a \[ ... \] block
    for i in range(slide.body_line - 1, len(slide.lines)):
        line = slide.lines[i].rstrip("\r\n")
        display = in_display or line.lstrip().startswith("\\[")
        in_display = display and "\\]" not in line
        skip = display or i in fenced or line.startswith(not_prose)
        if skip or not line.strip():
            if paragraph and (text := _before_macros(paragraph)):
                break
            paragraph = []
            continue
        paragraph.append(line)
    else:
        text = _before_macros(paragraph)
    # Jupyter reads math between dollars, the site between \( and \).
    return text.replace("\\(", "$").replace("\\)", "$")


def _before_macros(paragraph: list[str]) -> str:
    """The paragraph up to the last full sentence before a line with a
    macro call, whose text is the site's (slide 45's lead showed its
    raw ``{{ value(...) }}`` calls); "" when none is left."""
    kept = list(itertools.takewhile(lambda line: "{{" not in line, paragraph))
    text = "\n".join(kept)
    if len(kept) < len(paragraph):
        ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", text)]
        text = text[: ends[-1]] if ends else ""
    return text


def write_deck_notebook(deck, outputs: dict[str, str]) -> Path:
    """Write the deck notebook under ``OUT_DIR``; returns that folder."""
    out = deck.root / OUT_DIR
    _write_notebook(out / DECK_NOTEBOOK, deck_notebook(deck, outputs))
    return out


# --- math on a notebook page -------------------------------------------------

#: Jupyter's math in a Markdown cell: $$display$$ or $inline$ (no space
#: just inside the dollars, as Jupyter requires).
_JUPYTER_MATH = re.compile(
    r"\$\$(?P<display>.+?)\$\$|(?<![\\$])\$(?P<inline>[^\s$](?:[^$]*?[^\s$\\])?)\$",
    re.DOTALL,
)
_MARKDOWN_CELL = re.compile(
    r'<div class="[^"]*\bjp-RenderedMarkdown\b[^"]*"[^>]*>'
)
_DIV_TAG = re.compile(r"<(/?)div\b[^>]*>")


def mark_math(page_html: str) -> str:
    """A notebook page's ``$...$`` math (left by mkdocs-jupyter for
    MathJax) wrapped as arithmatex wraps the slides', to be typeset with
    theirs. Only Markdown cells are parsed: a whole page (up to 1 MB)
    cost a second per build."""
    if "$" not in page_html:
        return page_html
    parts, done = [], 0
    for cell in _MARKDOWN_CELL.finditer(page_html):
        depth = 1  # the cell's inner HTML ends at its div's end
        for tag in _DIV_TAG.finditer(page_html, cell.end()):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                inner = page_html[cell.end() : tag.start()]
                parts += [page_html[done : cell.end()], _mark_cell(inner)]
                done = tag.start()
                break
    return "".join(parts) + page_html[done:]


def _mark_cell(inner: str) -> str:
    """One Markdown cell's HTML with its prose math wrapped."""
    from bs4 import BeautifulSoup

    if "$" not in inner:
        return inner
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
    """One formula (already HTML-escaped), as arithmatex writes it."""
    if match["display"] is not None:
        tex = match["display"].strip()
        return f'<div class="arithmatex">\\[{tex}\\]</div>'
    return f'<span class="arithmatex">\\({match["inline"]}\\)</span>'


# --- the homework ------------------------------------------------------------


class Homework:
    """The homework notebooks of one build, made beside the pages.

    Starters are written at once. Solutions, unless unchanged since they
    last ran (the same source and ``cache_key``, the engine's key for
    mha_ref, torch and Python), run as one sandboxed, time-bounded job
    on the engine's fork server while the pages render. ``wait`` writes
    them and returns the problems; ``cancel`` stops the run, kernels too.
    """

    def __init__(self, root: Path, cache_key: str, pool):
        from .engine.preload import preload_plan
        from .engine.runner import Module

        self.root = Path(root)
        self.uris: list[str] = []  # every homework notebook this build has
        self.problems: list = []
        self._jobs: dict[str, tuple[str, str]] = {}  # rel -> (uri, key)
        self._started = None
        sources = []  # of the notebooks to run
        for uri, rel in HOMEWORK.items():
            source = self.root / rel
            if not source.is_file():
                continue
            self.uris.append(uri)
            text = source.read_text(encoding="utf-8")
            key = hashlib.sha256((cache_key + text).encode()).hexdigest()
            target = self.root / OUT_DIR / uri
            stamp = target.with_suffix(".key")
            fresh = stamp.is_file() and stamp.read_text() == key
            if fresh and target.is_file():
                continue
            if rel in EXECUTED:
                self._jobs[rel] = (uri, key)
                sources.append(text)
            else:
                self._save(uri, to_ipynb(source), key)
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
        """Block until the notebooks are written; the problems found. A
        notebook the job gave no answer for (it died, timed out) is a
        problem with the job's last lines of stderr."""
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
                continue  # not an answer
            if rel in self._jobs and rel not in done:
                done.add(rel)
                self.problems += [Problem(*p) for p in problems]
                if text is not None:
                    uri, key = self._jobs[rel]
                    self._save(uri, nbformat.reads(text, as_version=4), key)
        if run.timed_out:
            why = f"did not finish within {EXECUTE_TIMEOUT} s"
        elif run.failure or run.exit:
            why = f"failed ({run.failure or f'exit {run.exit}'})"
        else:
            why = "gave no answer"
        detail = "\n".join(run.stderr.strip().splitlines()[-15:])
        for rel in self._jobs.keys() - done:
            self.problems.append(
                Problem(rel, 1, f"executing the notebook {why}", detail)
            )
        return self.problems

    def cancel(self) -> None:
        started, self._started = self._started, None
        if started is not None:
            started.cancel()

    def _save(self, uri: str, nb, key: str) -> None:
        """Write one notebook, then the stamp that says it is made."""
        target = self.root / OUT_DIR / uri
        _write_notebook(target, nb)
        target.with_suffix(".key").write_text(key)


def _run(rel: str, km) -> tuple[str | None, list]:
    """Execute ``rel`` in the kernel ``km``, then kill it: (notebook
    text or None, problems as [path, line, message])."""
    import nbformat

    nb = to_ipynb(rel)
    try:
        execute(nb, EXECUTE_TIMEOUT, source=rel, km=km)
    except NotebookExecutionError as exc:
        return None, [[exc.path, exc.line or 1, exc.message]]
    finally:
        km.lesson_kernel.kill()
    return nbformat.writes(nb), []


def _forked_kernel():
    """A python3 kernel forked from this job, already started.

    It inherits the fork server's imports: a fresh kernel spent 9 of its
    12 CPU-seconds importing torch, matplotlib and sympy (two made a
    clean build a third slower). Only from a process with one thread: a
    lock another thread held stays held in the fork for ever (a kernel
    forked after zmq's threads started hung a build in CI). Returns an
    ``AsyncKernelManager`` whose provisioner's process is the fork, also
    ``km.lesson_kernel`` (jupyter_client forgets it on cleanup).
    """
    from jupyter_client.connect import write_connection_file
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.provisioning import LocalProvisioner

    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise RuntimeError(
            f"a kernel forked from a process with {threads} threads can "
            "hang; fork every kernel before running any notebook"
        )
    # ipc, not tcp: no port to race for, nothing listening on the network.
    folder = tempfile.mkdtemp(prefix="kernel-")
    connection_file, _ = write_connection_file(
        os.path.join(folder, "kernel.json"),
        transport="ipc",
        ip=os.path.join(folder, "ipc"),
    )
    pid = os.fork()
    if pid == 0:
        _run_kernel(connection_file)  # never returns
    km = AsyncKernelManager(
        connection_file=connection_file, kernel_name=KERNEL
    )
    km.load_connection_file()
    provisioner = LocalProvisioner(
        kernel_id=os.path.basename(folder),
        kernel_spec=km.kernel_spec,
        parent=km,
    )
    provisioner.process = km.lesson_kernel = _Forked(pid, folder)
    km.provisioner = provisioner
    return km


def _run_kernel(connection_file: str) -> None:
    """The forked child: become the kernel, then exit."""
    code = 1
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        # As a kernel manager starts one: its parent named, and inline
        # figures (matplotlib was imported before _main set its backend).
        os.environ["JPY_PARENT_PID"] = str(os.getppid())
        matplotlib = sys.modules.get("matplotlib")
        if matplotlib is not None:
            matplotlib.rcParams["backend"] = os.environ["MPLBACKEND"]
        sys.argv = ["ipykernel_launcher", "-f", connection_file, *KERNEL_ARGS]
        runpy.run_module(
            "ipykernel_launcher", run_name="__main__", alter_sys=True
        )
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


class _Forked:
    """The fork as the provisioner's process, which jupyter_client polls
    to tell whether the kernel is alive. ``kill`` (again is harmless)
    also removes the kernel's files."""

    def __init__(self, pid: int, folder: str):
        self.pid, self.folder = pid, folder
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            status = os.waitpid(self.pid, 0)[1]
            self.returncode = os.waitstatus_to_exitcode(status)
        shutil.rmtree(self.folder, ignore_errors=True)


def _disagreement(rel: str, first: str, second: str) -> list:
    """A problem if two executions of a notebook printed different
    outputs (its kernels start from different random seeds)."""
    import nbformat

    def outputs(text):
        for cell in nbformat.reads(text, as_version=4).cells:
            yield [
                {k: v for k, v in out.items() if k != "execution_count"}
                for out in cell.get("outputs", [])
            ]

    pairs = zip(outputs(first), outputs(second), strict=False)
    for n, (a, b) in enumerate(pairs, 1):
        if a != b:
            message = (
                f"cell {n} printed different output in two runs: the "
                "notebook is nondeterministic (seed torch with "
                "torch.manual_seed; do not print times, ids or set order)"
            )
            return [[rel, 1, message]]
    return []


def _main(argv: list[str]) -> int:
    """The job ``Homework`` runs, from the root: each argument a notebook
    script, run twice. Prints a JSON line per notebook, ``[rel, notebook
    text or null, problems]``; the build writes the files (the
    repository is read-only to the job)."""
    # The answers get the job's stdout; the kernels' output its stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # Every kernel first, while this process has one thread (_forked_kernel).
    kernels = {rel: (_forked_kernel(), _forked_kernel()) for rel in argv}
    try:
        for rel, (first, second) in kernels.items():
            text, problems = _run(rel, first)
            if text is not None:
                again, problems = _run(rel, second)
                if again is not None:
                    problems = _disagreement(rel, text, again)
            print(json.dumps([rel, text, problems]), file=answers, flush=True)
    finally:
        for km in (km for pair in kernels.values() for km in pair):
            km.lesson_kernel.kill()
    return 0


def _write_notebook(path: Path, nb) -> None:
    """Write ``nb`` unless ``path`` holds it; atomically (no half file)."""
    import nbformat

    text = nbformat.writes(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        write_atomic(path, text)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
