"""Check every slide against its snippets; accept new outputs on request.

``check`` reads the slides, runs every snippet a slide includes (through
the cache), compares each Output block with the snippet's stdout,
collects the published tables and validates the ``table()`` macro calls.
Every problem is collected, none stops the others. ``update`` does the
same and then rewrites the Output blocks that drifted.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import cache as cache_mod
from .slides import PYTHON_LANGS, Fence, Slide, read_slide, section_exists

DEFAULT_TIMEOUT = 60.0
_SERVER_FILE = str(Path(__file__).with_name("server.py"))
# `--8<-- "x"` after `ruff format`: `--8 < --"x"`.
_MANGLED = re.compile(r"""^\s*-+\s*8\s*<\s*-+\s*["']""")
#: Environment settings (the CLI flags win over them).
TIMEOUT_ENV = "SNIPPET_TIMEOUT"
JOBS_ENV = "SNIPPET_JOBS"
CACHE_ENV = "SNIPPET_CACHE_DIR"
#: mkdocs.yml ``extra:`` key for the timeout (the env setting wins).
TIMEOUT_EXTRA = "snippet_timeout"
#: Preloaded by the fork servers besides torch and mha_ref: modules torch
#: imports lazily that lesson snippets reach. sympy (via symbolic_shapes,
#: ~0.5 s) comes from torch.broadcast_shapes, nn.MultiheadAttention and
#: FlopCounterMode; torch.distributed.tensor from nn.MultiheadAttention;
#: torch._dynamo (~1.2 s) from F.linear under FlopCounterMode
#: (torch/_compile.py). Paid once per server instead of once per child
#: (each snippet runs twice): measured with gc off during preload, a cold
#: check of the 16 lesson snippets took 2.9-3.5 s with them, 3.2-4.6 s
#: without.
PRELOAD = [
    "torch.fx.experimental.symbolic_shapes",
    "torch._dynamo",
    "torch.distributed.tensor",
]
#: Lines of a traceback or a hang dump shown in a problem.
TAIL_LINES = 10


class EngineError(Exception):
    """Raised with the full report when a caller needs a clean result."""

    def __init__(self, result: Result):
        super().__init__(result.report())
        self.result = result


@dataclass
class Problem:
    """One problem, located at a file and line (relative to the root)."""

    path: str
    line: int
    message: str
    detail: str = ""
    kind: str = "error"

    def __str__(self) -> str:
        head = f"{self.path}:{self.line}: {self.message}"
        if not self.detail:
            return head
        body = "\n".join(
            "    " + s if s else "" for s in self.detail.splitlines()
        )
        return head + "\n" + body


@dataclass
class _Drift:
    slide: Slide
    fence: Fence
    snippet: str
    actual: list[str]
    problem: Problem


@dataclass
class Result:
    """What a check found: problems, tables, outputs and counts."""

    root: Path
    problems: list[Problem] = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # snippets, no result
    slides: int = 0
    ran: int = 0
    cached: int = 0
    seconds: float = 0.0
    accept: str = "make update-outputs"
    updated: list[str] = field(default_factory=list)
    drifts: list[_Drift] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        n = len(self.outputs) + len(self.failed)
        state = "OK" if self.ok else _plural(len(self.problems), "problem")
        return (
            f"snippet engine: {_plural(self.slides, 'page')}, "
            f"{_plural(n, 'snippet')} ({self.ran} run, {self.cached} "
            f"cached), {_plural(len(self.tables), 'table')}: {state} "
            f"in {self.seconds:.2f} s"
        )

    def report(self) -> str:
        """Every problem, then how to accept drifted output."""
        parts = [str(p) for p in self.problems]
        if any(p.kind == "drift" for p in self.problems):
            parts.append(
                "If the new output is right, accept it with: " + self.accept
            )
        parts.append(self.summary())
        return "\n".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# --- settings ----------------------------------------------------------------


def resolve_timeout(
    flag: float | None = None, root: Path | None = None, extra=None
) -> float:
    """The snippet timeout: flag, else env, else mkdocs.yml extra, else 60."""
    if flag is not None:
        return _positive(flag, "--timeout")
    if os.environ.get(TIMEOUT_ENV):
        return _positive(os.environ[TIMEOUT_ENV], TIMEOUT_ENV)
    if extra is None and root is not None:
        extra = _mkdocs_extra(Path(root) / "mkdocs.yml")
    if extra and extra.get(TIMEOUT_EXTRA) is not None:
        return _positive(extra[TIMEOUT_EXTRA], f"extra.{TIMEOUT_EXTRA}")
    return DEFAULT_TIMEOUT


def resolve_jobs(flag: int | None = None) -> int:
    value = flag or os.environ.get(JOBS_ENV)
    if value:
        return max(1, int(value))
    return max(1, len(os.sched_getaffinity(0)))


def _positive(value, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: not a number of seconds: {value!r}"
        ) from None
    if not number > 0:
        raise ValueError(f"{name}: must be positive, got {value!r}")
    return number


def _mkdocs_extra(path: Path) -> dict:
    """``extra:`` of a mkdocs.yml, ignoring tags it cannot construct."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    if TIMEOUT_EXTRA not in text:
        return {}  # parsing YAML costs a tenth of a warm check
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        data = yaml.load(text, Loader=Loader)
    except yaml.YAMLError:
        return {}
    extra = data.get("extra") if isinstance(data, dict) else None
    return extra if isinstance(extra, dict) else {}


def _accept_command(root: Path) -> str:
    cwd = Path.cwd().resolve()
    if root == cwd:
        try:
            makefile = (root / "Makefile").read_text(encoding="utf-8")
        except OSError:
            makefile = ""
        if "update-outputs:" in makefile:
            return "make update-outputs"
        return "python -m lessonbuild.engine update"
    shown = os.path.relpath(root, cwd) if root.is_relative_to(cwd) else root
    return f"python -m lessonbuild.engine update --root {shown}"


# --- the check ---------------------------------------------------------------

_last: dict[Path, Result] = {}


def check(
    root: Path | str = ".",
    *,
    docs_dir: Path | str | None = None,
    timeout: float | None = None,
    jobs: int | None = None,
    cache_dir: Path | str | None | bool = True,
) -> Result:
    """Run every snippet the slides use and compare every Output block.

    ``cache_dir``: True for the default (``SNIPPET_CACHE_DIR`` or
    ``<root>/.cache/engine``), False or None for no cache, or a folder.
    """
    start = time.monotonic()
    root = Path(root).resolve()
    docs = Path(docs_dir).resolve() if docs_dir else root / "docs"
    snippets_dir = root / "snippets"
    timeout = resolve_timeout(timeout, root)
    jobs = resolve_jobs(jobs)
    if cache_dir is True:
        env = os.environ.get(CACHE_ENV)
        cache_dir = Path(env) if env else root / ".cache" / "engine"
    store = cache_mod.Cache(Path(cache_dir) if cache_dir else None)

    result = Result(root=root, accept=_accept_command(root))
    problems = result.problems
    slides, used, pairs = _plan(root, docs, problems)
    result.slides = len(slides)

    runs = _run_snippets(
        root, snippets_dir, sorted(used), store, timeout, jobs
    )
    result.ran = sum(1 for r in runs.values() if not r.get("cached"))
    result.cached = sum(1 for r in runs.values() if r.get("cached"))
    for rel in sorted(used):
        run = runs[rel]
        where = used[rel][0]
        if run["ok"]:
            result.outputs[rel] = run["stdout"]
            _collect_tables(rel, run["tables"], where, result)
        else:
            result.failed.append(rel)
            problems.append(
                Problem(where[0], where[1], run["message"], run["detail"])
            )

    shown = set()
    for slide, fence, rel in pairs:
        shown.add(rel)
        if rel in result.outputs:
            _compare(slide, fence, rel, result)
    for rel in sorted(set(result.outputs) - shown):
        if result.outputs[rel].strip():
            where = used[rel][0]
            problems.append(
                Problem(
                    where[0],
                    where[1],
                    f"{rel} prints output but no Output block follows "
                    f"its code block: add an empty "
                    f'```text title="Output"``` block after it and run '
                    f"{result.accept}",
                    kind="no-output",
                )
            )

    _check_table_calls(slides, result)
    problems.sort(key=lambda p: (p.path, p.line))
    result.seconds = time.monotonic() - start
    _last[root] = result
    return result


def _plan(root: Path, docs: Path, problems: list[Problem]):
    """Read the slides: what runs, which Output blocks it fills.

    Returns the slides, the include locations of each snippet used
    (``{rel: [(slide, line), ...]}``) and the (slide, Output block,
    snippet) pairs; slide-level problems go to ``problems``.
    """
    snippets_dir = root / "snippets"
    slides = _read_slides(root, docs, problems)
    used: dict[str, list[tuple[str, int]]] = {}
    pairs: list[tuple[Slide, Fence, str]] = []
    for slide in slides:
        _check_slide(root, snippets_dir, slide, used, pairs, problems)
    all_snippets = sorted(
        p.relative_to(root).as_posix()
        for p in snippets_dir.rglob("*.py")
        if "__pycache__" not in p.parts
    )
    for rel in all_snippets:
        if rel not in used:
            problems.append(
                Problem(
                    rel,
                    1,
                    f"snippet is not included by any page under "
                    f"{_rel(docs, root)}/ (include it or delete it)",
                    kind="unused",
                )
            )
    return slides, used, pairs


def used_snippets(root: Path | str = ".", docs_dir=None) -> list[str]:
    """The snippets the slides include (paths relative to the root)."""
    root = Path(root).resolve()
    docs = Path(docs_dir).resolve() if docs_dir else root / "docs"
    return sorted(_plan(root, docs, [])[1])


def update(root: Path | str = ".", **options) -> Result:
    """Check, then rewrite each drifted Output block with the new output.

    Only the lines between an Output block's fences change; each file is
    written to a temporary file and moved into place. Problems other
    than drift are reported as by ``check``.
    """
    result = check(root, **options)
    by_slide: dict[str, list[_Drift]] = {}
    for drift in result.drifts:
        by_slide.setdefault(drift.slide.path, []).append(drift)
    for rel, drifts in sorted(by_slide.items()):
        slide = drifts[0].slide
        path = result.root / rel
        current = path.read_bytes().decode("utf-8")
        if current != "".join(slide.lines):
            result.problems.append(
                Problem(
                    rel,
                    1,
                    "file changed while the snippets ran; run the "
                    "update again",
                )
            )
            continue
        lines = list(slide.lines)
        for drift in sorted(drifts, key=lambda d: -d.fence.start):
            _rewrite(lines, drift.fence, drift.actual)
        _write_atomic(path, "".join(lines))
        for drift in drifts:
            result.problems.remove(drift.problem)
            result.updated.append(
                f"{rel}:{drift.fence.line}: updated the output of "
                f"{drift.snippet}"
            )
    result.drifts = []
    _last.pop(result.root, None)  # the slides changed
    return result


def last_result(root: Path | str) -> Result | None:
    return _last.get(Path(root).resolve())


def forget(root: Path | str | None = None) -> None:
    if root is None:
        _last.clear()
    else:
        _last.pop(Path(root).resolve(), None)


def current_tables(root: Path | str | None = None) -> dict[str, dict]:
    """Table data by id: ``{"15_trace.shapes": {"columns", "rows"}}``.

    After the engine hook ran in this build (or any ``check`` of the same
    root in this process), that run's tables; otherwise a check now,
    through the cache. Raises ``EngineError`` when a snippet could not be
    run, since its tables would be missing. ``root`` defaults to the one
    root checked in this process, else the current directory. Returns a
    copy: ``columns`` is a list of headers, ``rows`` a list of lists of
    strings.
    """
    if root is None:
        root = next(iter(_last)) if len(_last) == 1 else Path.cwd()
    root = Path(root).resolve()
    result = _last.get(root) or check(root)
    if result.failed:
        raise EngineError(result)
    return copy.deepcopy(result.tables)


# --- slides ------------------------------------------------------------------


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _read_slides(root: Path, docs: Path, problems) -> list[Slide]:
    slides = []
    for path in sorted(docs.rglob("*.md")):
        try:
            slide = read_slide(root, path)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(_rel(path, root), 1, f"unreadable: {exc}"))
            continue
        slides.append(slide)
    return slides


def _is_snippet(root: Path, snippets_dir: Path, path: str) -> bool:
    full = (root / path).resolve()
    return full.suffix == ".py" and full.is_relative_to(snippets_dir)


def _check_slide(root, snippets_dir, slide, used, pairs, problems):
    where = slide.path
    for inc in slide.includes:
        file = root / inc.path
        if not file.is_file():
            problems.append(
                Problem(
                    where,
                    inc.line,
                    f'include of a missing file: --8<-- "{inc.target}" '
                    f"({inc.path} does not exist)",
                    kind="missing",
                )
            )
            continue
        if inc.section and not section_exists(
            file.read_text(encoding="utf-8", errors="replace"), inc.section
        ):
            problems.append(
                Problem(
                    where,
                    inc.line,
                    f"{inc.path} has no section '{inc.section}' (mark it "
                    f"with `# --8<-- [start:{inc.section}]` ... "
                    f"`# --8<-- [end:{inc.section}]`)",
                    kind="missing",
                )
            )
        if _is_snippet(root, snippets_dir, inc.path):
            rel = (root / inc.path).resolve().relative_to(root).as_posix()
            used.setdefault(rel, []).append((where, inc.line))
            if inc.fence is None:
                problems.append(
                    Problem(
                        where,
                        inc.line,
                        f"{inc.path} is included outside a code block; "
                        f"put the include inside a ```python fence",
                    )
                )
    include_lines = {inc.line - 1 for inc in slide.includes}
    for fence in slide.fences:
        if fence.is_output:
            _pair_output(root, snippets_dir, slide, fence, pairs, problems)
            continue
        if fence.lang not in PYTHON_LANGS:
            continue
        end = fence.end if fence.end is not None else len(slide.lines)
        typed = [
            i
            for i in range(fence.start + 1, end)
            if slide.lines[i].strip()
            and i not in include_lines
            and not re.fullmatch(r"\s*;*-+8<-+\s*", slide.lines[i])
        ]
        mangled = [i for i in typed if _MANGLED.match(slide.lines[i])]
        for i in mangled:
            problems.append(
                Problem(
                    where,
                    i + 1,
                    "this include line was rewritten by a code formatter "
                    "(ruff >= 0.16 formats Python fences in Markdown): "
                    'write it as --8<-- "path" again',
                    kind="inline",
                )
            )
        if typed and not mangled:
            problems.append(
                Problem(
                    where,
                    fence.line,
                    "inline Python code block: put the code in a file in "
                    'snippets/ and include it (--8<-- "snippets/NN_x.py")',
                    kind="inline",
                )
            )


def _pair_output(root, snippets_dir, slide, fence, pairs, problems):
    where = slide.path
    if fence.end is None:
        problems.append(
            Problem(where, fence.line, "Output block is never closed")
        )
        return
    above = slide.block_above(fence)
    includes = slide.includes_in(above) if above is not None else []
    if above is None or above.is_output or not includes:
        problems.append(
            Problem(
                where,
                fence.line,
                "Output block with no code block above it (an Output "
                "block must follow the code block that includes its "
                "snippet)",
                kind="orphan",
            )
        )
        return
    snippets = sorted(
        {
            (root / i.path).resolve().relative_to(root).as_posix()
            for i in includes
            if (root / i.path).is_file()
            and _is_snippet(root, snippets_dir, i.path)
        }
    )
    if not snippets:
        if all((root / i.path).is_file() for i in includes):
            names = ", ".join(sorted({i.path for i in includes}))
            problems.append(
                Problem(
                    where,
                    fence.line,
                    f"Output block after a code block that is not run: "
                    f"{names} is not in snippets/ (remove the Output "
                    f"block)",
                    kind="orphan",
                )
            )
        return
    if len(snippets) > 1:
        problems.append(
            Problem(
                where,
                fence.line,
                f"Output block after a code block that includes several "
                f"snippets ({', '.join(snippets)}); give each its own "
                f"code block",
                kind="orphan",
            )
        )
        return
    pairs.append((slide, fence, snippets[0]))


# --- runs --------------------------------------------------------------------


def _run_snippets(root, snippets_dir, rels, store, timeout, jobs):
    """Result per snippet: cached, or run twice in forked processes."""
    out: dict[str, dict] = {}
    if not rels:
        return out
    base = cache_mod.base_key(snippets_dir)
    keys, todo = {}, []
    for rel in rels:
        data = (root / rel).read_bytes()
        keys[rel] = cache_mod.snippet_key(base, rel, data)
        record = store.get(keys[rel])
        if record is not None:
            out[rel] = {**record, "ok": True, "cached": True}
        else:
            todo.append(rel)
    if not todo:
        return out

    from .runner import run_batches  # only when something must run

    paths = [root / rel for rel in todo]
    first, second = run_batches(
        root,
        [paths, paths],
        timeout=timeout,
        concurrency=math.ceil(jobs / 2),
        preload=PRELOAD,
    )
    for rel, a, b in zip(todo, first, second, strict=True):
        out[rel] = _judge(root, rel, a, b, timeout)
        if out[rel]["ok"]:
            store.put(
                keys[rel],
                {
                    "snippet": rel,
                    "stdout": a.stdout,
                    "tables": a.tables,
                    "seconds": round(a.seconds, 4),
                },
            )
    return out


def _judge(root: Path, rel: str, a, b, timeout: float) -> dict:
    def fail(message, detail=""):
        return {"ok": False, "message": message, "detail": detail}

    for run in (a, b):
        if run.failure:
            return fail(f"could not run {rel}", _clean(root, run.failure))
    for run in (a, b):
        if run.timed_out:
            detail = _tail(_clean(root, _hang_dump(run.stderr)))
            return fail(
                f"{rel} did not finish within {timeout:g} s and was "
                f"killed (a hang? the timeout is set with --timeout, "
                f"{TIMEOUT_ENV} or extra.{TIMEOUT_EXTRA} in mkdocs.yml)",
                "where it was:\n" + detail if detail else "",
            )
    for run, other in ((a, b), (b, a)):
        if run.exit != 0:
            err = _clean(root, run.stderr)
            last = err.strip().splitlines()[-1] if err.strip() else ""
            how = (
                f"was killed by signal {-run.exit}"
                if run.exit < 0
                else f"exited with status {run.exit}"
            )
            flaky = (
                " (the other run succeeded: it is nondeterministic)"
                if other.exit == 0
                else ""
            )
            message = f"{rel} {how}{flaky}"
            if last:
                message += f": {last}"
            return fail(message, _tail(err))
    if a.stdout != b.stdout or _tables(a.tables) != _tables(b.tables):
        diff = _diff(
            a.stdout.splitlines(),
            b.stdout.splitlines(),
            "stdout of run 1",
            "stdout of run 2",
        )
        if a.stdout == b.stdout:
            diff = "the published tables differ between the two runs"
        return fail(
            f"{rel} is nondeterministic: two runs printed different "
            f"output (seed torch with torch.manual_seed; do not print "
            f"times, ids, or set order)",
            diff,
        )
    return {"ok": True, "stdout": a.stdout, "tables": a.tables}


def _hang_dump(stderr: str) -> str:
    """The faulthandler dump, without the frames of the runner itself."""
    keep = []
    for line in stderr.splitlines():
        if "<frozen runpy>" in line or line.strip().startswith(
            f'File "{_SERVER_FILE}"'
        ):
            continue
        keep.append(line)
    return "\n".join(keep)


def _tables(raw: str) -> list:
    out = []
    for line in raw.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(line)
    return out


def _clean(root: Path, text: str) -> str:
    """Paths under the root as the contributor types them."""
    return text.replace(str(root) + os.sep, "")


def _tail(text: str, n: int = TAIL_LINES) -> str:
    lines = text.rstrip().splitlines()
    if len(lines) <= n:
        return "\n".join(lines)
    return "\n".join(["...", *lines[-n:]])


def _collect_tables(rel: str, raw: str, where, result: Result) -> None:
    stem = Path(rel).stem
    for record in _tables(raw):
        ok = (
            isinstance(record, dict)
            and isinstance(record.get("name"), str)
            and isinstance(record.get("columns"), list)
            and isinstance(record.get("rows"), list)
        )
        if not ok:
            result.problems.append(
                Problem(
                    where[0],
                    where[1],
                    f"{rel} wrote a table record the engine cannot read: "
                    f"{str(record)[:80]!r}",
                )
            )
            continue
        table_id = f"{stem}.{record['name']}"
        if table_id in result.tables:
            result.problems.append(
                Problem(
                    where[0],
                    where[1],
                    f"{rel} published table {record['name']!r} twice; "
                    f"table names must be unique per snippet",
                )
            )
            continue
        result.tables[table_id] = {
            "columns": [str(c) for c in record["columns"]],
            "rows": [[str(c) for c in row] for row in record["rows"]],
        }


# --- Output blocks -----------------------------------------------------------


def _normalize(lines: list[str]) -> list[str]:
    """Drop trailing whitespace of every line and trailing blank lines."""
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def _diff(expected, actual, from_name, to_name) -> str:
    return "\n".join(
        difflib.unified_diff(
            expected, actual, from_name, to_name, lineterm="", n=2
        )
    )


def _compare(slide: Slide, fence: Fence, rel: str, result: Result) -> None:
    expected = _normalize(fence.content)
    actual = _normalize(result.outputs[rel].replace("\r\n", "\n").split("\n"))
    if expected == actual:
        return
    where = f"{slide.path}:{fence.line}"
    if expected:
        message = f"output of {rel} drifted"
    else:
        message = f"Output block of {rel} is empty (fill it in)"
    detail = _diff(expected, actual, f"expected ({where})", f"actual ({rel})")
    problem = Problem(
        slide.path,
        fence.line,
        message,
        detail + "\naccept with: " + result.accept,
        kind="drift",
    )
    result.problems.append(problem)
    result.drifts.append(_Drift(slide, fence, rel, actual, problem))


def _rewrite(lines: list[str], fence: Fence, actual: list[str]) -> None:
    """Replace the body of ``fence`` in ``lines`` (raw, with endings)."""
    opening = lines[fence.start]
    newline = opening[len(opening.rstrip("\r\n")) :] or "\n"
    body = [(fence.indent + text if text else "") + newline for text in actual]
    # A body line that looks like a closing fence would end the block
    # early: lengthen the fences past the longest such run.
    char = fence.marker[0]
    longest = max(
        (len(t) - len(t.lstrip(char)) for t in actual if t.startswith(char)),
        default=0,
    )
    if longest >= len(fence.marker):
        marker = char * (longest + 1)
        lines[fence.start] = opening.replace(fence.marker, marker, 1)
        closing = lines[fence.end]
        lines[fence.end] = closing.replace(fence.marker, marker, 1)
    lines[fence.start + 1 : fence.end] = body


def _write_atomic(path: Path, text: str) -> None:
    mode = path.stat().st_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- table macro calls -------------------------------------------------------


def _check_table_calls(slides: list[Slide], result: Result) -> None:
    failed_stems = {Path(rel).stem for rel in result.failed}
    known = sorted(result.tables)
    for slide in slides:
        for call in slide.tables:
            table = result.tables.get(call.table_id)
            if table is None:
                if call.table_id.split(".")[0] in failed_stems:
                    continue  # its snippet failed; that is reported
                result.problems.append(
                    Problem(
                        call.slide,
                        call.line,
                        unknown_table_message(call.table_id, known),
                        kind="table",
                    )
                )
            elif call.hide is not None and call.hide not in table["columns"]:
                result.problems.append(
                    Problem(
                        call.slide,
                        call.line,
                        unknown_column_message(
                            call.table_id, call.hide, table["columns"]
                        ),
                        kind="table",
                    )
                )


def unknown_table_message(table_id: str, known) -> str:
    listing = ", ".join(known) if known else "none"
    return (
        f"table({table_id!r}): no snippet published this table; "
        f"known tables: {listing}"
    )


def unknown_column_message(table_id: str, hide: str, columns) -> str:
    return (
        f"table({table_id!r}, hide={hide!r}): no such column; columns: "
        + ", ".join(columns)
    )
