"""Check a deck against its snippets: ``check`` runs every snippet its
pages include (through the cache), compares each Output block with its
stdout and collects the published tables; ``update`` rewrites drift."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..deck import (
    MARKER_TEXT,
    PYTHON_LANGS,
    Deck,
    Fence,
    Slide,
    section_exists,
)
from ..problems import Problem
from ..settings import Settings
from . import cache as cache_mod
from .judge import judge
from .lint import set_order_problems
from .outputs import Drift, compare, remove_stale_temporaries, rewrite
from .preload import preload_plan
from .tables import check_calls, collect_tables, table_output_conflicts

ACCEPT = "make update-outputs"
#: (lines, bytes) one Output block may hold, unless configured.
OUTPUT_LIMITS = Settings().output_limits()
#: torch threads per first run (they share every core), and so per second
#: run too (another number can change a float sum).
FIRST_RUN_THREADS = 1
# `--8<-- "x"` after `ruff format`: `--8 < --"x"`.
_MANGLED = re.compile(r"""^\s*-+\s*8\s*<\s*-+\s*["']""")
#: A section marker as a snippet writes one: a comment line of its own.
_MARKER = re.compile(r"^\s*#\s*-+8<-+[ \t]+\[[^\]]*\]\s*$")
#: Files Python would import in place of a source file: a snippet's
#: ``import helpers`` would run them, not the helpers.py a page shows.
COMPILED = {".pyc", ".pyo", ".so", ".pyd", ".pth"}


@dataclass
class Result:
    """What a check found: problems, tables, outputs and counts."""

    problems: list[Problem] = field(default_factory=list)
    tables: dict[str, dict] = field(default_factory=dict)
    figures: dict[str, dict] = field(default_factory=dict)  # id -> alt, svg
    values: dict[str, str] = field(default_factory=dict)  # publish_value
    outputs: dict[str, str] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)  # snippets, no result
    refused: set[str] = field(default_factory=set)  # ids of bad records
    pages: int = 0
    ran: int = 0
    cached: int = 0
    seconds: float = 0.0
    updated: list[str] = field(default_factory=list)
    drifts: list[Drift] = field(default_factory=list, repr=False)
    # The second runs left running: their {rel: problem} once done.
    second: Callable | None = field(default=None, repr=False)
    # The base key the snippets ran under, for the homework too (computed
    # again, a file saved mid-build changed it: the second runs stopped).
    key: str = ""

    def finish(self) -> list[Problem]:
        """Wait for the second runs ``check(defer_second=True)`` left
        and judge each pair: the problems found, also in ``problems``."""
        second, self.second = self.second, None
        if second is None:
            return []
        found = second()
        # Its first run's output stands for nothing now: no drift either.
        stale = {id(d.problem) for d in self.drifts if d.snippet in found}
        self.drifts = [d for d in self.drifts if d.snippet not in found]
        self.problems = [p for p in self.problems if id(p) not in stale]
        for rel in found:
            self.outputs.pop(rel, None)
            self.failed.append(rel)
        self.problems += found.values()
        self.problems.sort(key=lambda p: (p.path, p.line))
        return list(found.values())

    def summary(self) -> str:
        n = len(self.outputs) + len(self.failed)
        state = (
            _plural(len(self.problems), "problem") if self.problems else "OK"
        )
        return (
            f"snippet engine: {_plural(self.pages, 'page')}, "
            f"{_plural(n, 'snippet')} ({self.ran} run, {self.cached} "
            f"cached), {_plural(len(self.tables), 'table')}: {state} "
            f"in {self.seconds:.2f} s"
        )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _too_long(text: str, limits: tuple[int, int]) -> str:
    """What is too long about ``text`` as an Output block ("" if fine)."""
    max_lines, max_bytes = limits
    lines = len(text.rstrip("\n").split("\n")) if text.strip() else 0
    size = len(text.encode("utf-8", errors="replace"))
    if lines <= max_lines and size <= max_bytes:
        return ""
    return (
        f"{lines:,} lines ({size:,} bytes); an Output block may hold at "
        f"most {max_lines:,} lines and {max_bytes:,} bytes: print less "
        f"(a summary, a slice), or raise output_max_lines / "
        f"output_max_bytes under the lesson plugin in mkdocs.yml"
    )


def check(
    deck: Deck,
    *,
    timeout: float,
    jobs: int,
    cache_dir: Path | None,
    output_limits: tuple[int, int] = OUTPUT_LIMITS,
    pool=None,
    warm: bool = False,
    defer_second: bool = False,
) -> Result:
    """Run every snippet the deck uses and compare every Output block.

    ``pool``: fork servers to reuse (``runner.Pool``), or None to start
    and stop some. ``warm`` (serve): leave the servers importing what
    every snippet needs. ``defer_second`` (with a ``pool``): return after
    the first runs, the second going on while the pages render, until
    ``Result.finish`` judges the pairs.
    """
    start = time.monotonic()
    result = Result(pages=len(deck.pages))
    problems = result.problems
    used, pairs = plan(deck, problems)
    result.key = cache_mod.base_key(deck.root / "snippets")
    runs, unstable, result.second = _run_snippets(
        deck.root, used, timeout, jobs, pool, cache_dir, warm, defer_second,
        result.key,
    )  # fmt: skip
    result.cached = sum(bool(r.get("cached")) for r in runs.values())
    result.ran = len(runs) - result.cached
    for rel in sorted(used):
        where, run = used[rel][0], runs.get(rel)
        if rel in unstable:
            problems.extend(unstable[rel])
        elif not run["ok"]:
            problems.append(Problem(*where, run["message"], run["detail"]))
        elif too_long := _too_long(run["stdout"], output_limits):
            problems.append(Problem(*where, f"{rel} printed {too_long}"))
        else:
            result.outputs[rel] = run["stdout"]
            collect_tables(rel, run["tables"], where, result)
            _check_tables_against_output(rel, run["stdout"], where, result)
            continue
        result.failed.append(rel)

    for slide, fence, rel in pairs:
        if too_long := _too_long(fence.body, output_limits):
            message = f"this Output block holds {too_long}"
            problems.append(Problem(slide.path, fence.line, message))
        elif rel in result.outputs:
            drift = compare(slide, fence, rel, result.outputs[rel], ACCEPT)
            if drift is not None:
                problems.append(drift.problem)
                result.drifts.append(drift)
    shown = {rel for _, _, rel in pairs}
    for rel in sorted(set(result.outputs) - shown):
        if result.outputs[rel].strip():
            message = (
                f"{rel} prints output but no Output block follows its "
                f'code block: add an empty ```text title="Output"``` '
                f"block after it and run {ACCEPT}"
            )
            problems.append(Problem(*used[rel][0], message, kind="no-output"))
    check_calls(deck.pages, result)
    problems.sort(key=lambda p: (p.path, p.line))
    result.seconds = time.monotonic() - start
    return result


def _check_tables_against_output(rel, stdout, where, result) -> None:
    """A table may not contradict the Output block of its own run."""
    stem = Path(rel).stem + "."
    mine = {k: v for k, v in result.tables.items() if k.startswith(stem)}
    for table_id, row, column, cell, line in table_output_conflicts(
        rel, stdout, mine
    ):
        message = (
            f"table {table_id!r} says {column} = {cell} in row {row[0]}, "
            f"but the same run printed {line!r}: publish the figure you "
            f"print (compute it once)"
        )
        result.problems.append(Problem(*where, message, kind="table"))


def update(deck: Deck, **options) -> Result:
    """Check, then rewrite each drifted Output block with the new output.
    Problems other than drift are reported as by ``check``."""
    result = check(deck, **options)
    remove_stale_temporaries(deck.docs)
    by_slide: dict[str, list[Drift]] = {}
    for drift in result.drifts:
        by_slide.setdefault(drift.slide.path, []).append(drift)
    for rel, drifts in sorted(by_slide.items()):
        if moved := rewrite(deck.root, drifts):
            result.problems.extend(moved)
            continue
        for drift in drifts:
            result.problems.remove(drift.problem)
            result.updated.append(
                f"{rel}:{drift.fence.line}: updated the output of "
                f"{drift.snippet}"
            )
    result.drifts = []
    return result


# --- the plan: what runs, which Output blocks it fills ----------------------


def plan(deck: Deck, problems: list[Problem]):
    """The include locations of each snippet used, ``{rel: [(page,
    line), ...]}``, and the (page, Output block, snippet) pairs;
    page-level problems go to ``problems``."""
    root = deck.root
    used: dict[str, list[tuple[str, int]]] = {}
    pairs: list[tuple[Slide, Fence, str]] = []
    for page in deck.pages:
        _check_page(root, page, used, pairs, problems)
    docs = deck.docs.relative_to(root).as_posix()
    for path in sorted((root / "snippets").rglob("*")):
        rel = path.relative_to(root).as_posix()
        cached = "__pycache__" in path.parts
        if path.name == "__pycache__" or (
            path.suffix in COMPILED and not cached
        ):
            message = (
                "compiled code under snippets/ would run in place of the "
                "source a page shows (published code must be the code "
                "that ran): delete it"
            )
            problems.append(Problem(rel, 1, message))
        elif path.suffix == ".py" and rel not in used and not cached:
            message = (
                f"snippet is not included by any page under {docs}/ "
                f"(include it or delete it)"
            )
            problems.append(Problem(rel, 1, message, kind="unused"))
    return used, pairs


def used_snippets(deck: Deck) -> list[str]:
    """The snippets the deck includes (paths relative to the root)."""
    return sorted(plan(deck, [])[0])


def _snippet(root: Path, path: str) -> str | None:
    """``path`` relative to the root, resolved, if it is a snippet."""
    full = (root / path).resolve()
    if full.suffix == ".py" and full.is_relative_to(root / "snippets"):
        return full.relative_to(root).as_posix()
    return None


def _check_page(root, page, used, pairs, problems):
    for inc in page.includes:
        where = (page.path, inc.line)
        file = root / inc.path
        if not file.resolve().is_relative_to(root):
            message = (
                f'--8<-- "{inc.target}" leaves the repository '
                f"({inc.path} resolves to {file.resolve()}); include "
                "only files inside it"
            )
            problems.append(Problem(*where, message))
            continue
        if not file.is_file():
            message = (
                f'include of a missing file: --8<-- "{inc.target}" '
                f"({inc.path} does not exist)"
            )
            problems.append(Problem(*where, message, kind="missing"))
            continue
        for problem in included_text_problems(root, inc.path):
            if problem not in problems:
                problems.append(problem)
        if inc.section and not section_exists(
            file.read_text(encoding="utf-8", errors="replace"), inc.section
        ):
            message = (
                f"{inc.path} has no section '{inc.section}' (mark it "
                f"with `# --8<-- [start:{inc.section}]` ... "
                f"`# --8<-- [end:{inc.section}]`)"
            )
            problems.append(Problem(*where, message, kind="missing"))
        rel = _snippet(root, inc.path)
        if rel is not None:
            used.setdefault(rel, []).append(where)
            if inc.fence is None:
                message = (
                    f"{inc.path} is included outside a code block; "
                    f"put the include inside a ```python fence"
                )
                problems.append(Problem(*where, message))
    problems.extend(inline_code_problems(page))
    for fence in page.fences:
        if fence.looks_like_output:
            message = (
                f"code block titled {fence.title!r} looks like an "
                'Output block but is not one; title it exactly "Output" '
                "(so it is checked) or give it another title"
            )
            problems.append(Problem(page.path, fence.line, message))
        if fence.is_output:
            _pair_output(root, page, fence, pairs, problems)


def included_text_problems(root: Path, rel: str) -> list[Problem]:
    """An included file is published as it is: it must be UTF-8, and no
    line of it may be one pymdownx.snippets would replace (an include
    hidden in a docstring showed code the engine never ran)."""
    try:
        data = (root / rel).read_bytes()
    except OSError:
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        message = (
            f"{rel} is not UTF-8 (byte 0x{data[exc.start]:02x} at line "
            f"{line}); save it as UTF-8"
        )
        return [Problem(rel, line, message)]
    from pymdownx.snippets import SnippetPreprocessor

    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        if MARKER_TEXT not in line:
            continue
        m = SnippetPreprocessor.RE_SNIPPET_SECTION.match(line)
        if m and not m.group("escape") and not _MARKER.match(line):
            message = (
                f"{line.strip()!r} holds a section marker that "
                f"pymdownx.snippets would drop where {rel} is included: "
                "published code must be the code that ran (a marker is "
                "a line of its own: `# --8<-- [start:name]`)"
            )
        else:
            m = SnippetPreprocessor.RE_ALL_SNIPPETS.match(line)
            if not m or m.group("escape"):
                continue
            message = (
                f"{line.strip()!r} would include another file where "
                f"{rel} is included (pymdownx.snippets expands it); "
                "published code must be the code that ran: remove the line"
            )
        problems.append(Problem(rel, n, message))
    return problems


def inline_code_problems(page: Slide) -> list[Problem]:
    """Python typed into a page instead of included from snippets/."""
    problems = []
    include_lines = {inc.line - 1 for inc in page.includes}
    for fence in page.fences:
        if fence.is_output or fence.lang not in PYTHON_LANGS:
            continue
        end = fence.end if fence.end is not None else len(page.lines)
        typed = [
            i
            for i in range(fence.start + 1, end)
            if page.lines[i].strip()
            and i not in include_lines
            and not re.fullmatch(r"\s*;*-+8<-+\s*", page.lines[i])
        ]
        mangled = [i for i in typed if _MANGLED.match(page.lines[i])]
        for i in mangled:
            message = (
                "this include line was rewritten by a code formatter "
                "(ruff >= 0.16 formats Python fences in Markdown): "
                'write it as --8<-- "path" again'
            )
            problems.append(Problem(page.path, i + 1, message, kind="inline"))
        if typed and not mangled:
            message = (
                "inline Python code block: put the code in a file in "
                'snippets/ and include it (--8<-- "snippets/NN_x.py")'
            )
            problems.append(
                Problem(page.path, fence.line, message, kind="inline")
            )
    return problems


def _pair_output(root, page, fence, pairs, problems):
    where = (page.path, fence.line)
    if fence.end is None:
        problems.append(Problem(*where, "Output block is never closed"))
        return
    above = page.block_above(fence)
    includes = page.includes_in(above) if above is not None else []
    files = [inc.path for inc in includes if (root / inc.path).is_file()]
    snippets = sorted({_snippet(root, path) for path in files} - {None})
    if above is None or above.is_output or not includes:
        message = (
            "Output block with no code block above it (an Output block "
            "must follow the code block that includes its snippet)"
        )
    elif len(snippets) == 1:
        pairs.append((page, fence, snippets[0]))
        return
    elif snippets:
        message = (
            f"Output block after a code block that includes several "
            f"snippets ({', '.join(snippets)}); give each its own code block"
        )
    elif len(files) == len(includes):
        message = (
            "Output block after a code block that is not run: "
            f"{', '.join(sorted(set(files)))} is not in snippets/ (remove "
            "the Output block)"
        )
    else:
        return
    problems.append(Problem(*where, message, kind="orphan"))


# --- runs --------------------------------------------------------------------


def prestart(root: Path, cache_dir: Path | None, pool) -> bool:
    """Have the seed-0 server start importing torch now (on the core
    idle while MkDocs loads its plugins), if a file under ``snippets/``
    has no valid cached run; True if it did."""
    snippets = root / "snippets"
    if not snippets.is_dir():
        return False
    base = cache_mod.base_key(snippets)
    store = cache_mod.Cache(cache_dir)
    for path in sorted(snippets.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            key = cache_mod.snippet_key(base, rel, path.read_bytes())
        except OSError:
            continue  # check reports it, at the page that includes it
        if store.get(key, root) is None:
            pool.warm(["torch"], key=base, count=1)
            return True
    return False


def _run_snippets(
    root, used, timeout, jobs, pool, cache_dir, warm, defer, base
):
    """({rel: verdict}, {rel: set-order problems}, the second runs or
    None): each snippet cached, refused for printing set order (lint.py,
    in the key: only a miss is linted), or run twice (the second runs
    left running with ``defer``)."""
    out, unstable, second = {}, {}, None
    if not used:
        return out, unstable, second
    store = cache_mod.Cache(cache_dir)
    keys, todo, sources = {}, [], {}
    for rel in sorted(used):
        data = (root / rel).read_bytes()
        sources[rel] = data.decode("utf-8", errors="replace")
        keys[rel] = cache_mod.snippet_key(base, rel, data)
        record = store.get(keys[rel], root)
        if record is not None:
            out[rel] = {**record, "ok": True, "cached": True}
        elif found := set_order_problems(rel, sources[rel]):
            unstable[rel] = found
        else:
            todo.append(rel)
    preload = preload_plan([sources[rel] for rel in todo])

    def judged(rel, a, b) -> dict:
        """The verdict on two runs, cached if they agree and may be."""
        verdict = judge(root, rel, a, b, timeout)
        if verdict["ok"] and verdict["cacheable"]:
            record = {
                "snippet": rel,
                "stdout": a.stdout,
                "tables": a.tables,
                "seconds": round(a.seconds, 4),
                "reads": cache_mod.file_hashes(root, a.reads + b.reads),
            }
            store.put(keys[rel], record)
        return verdict

    paths = [root / rel for rel in todo]
    if todo and defer and pool is not None:
        # The first runs use every core, the seed-1 server imports in the
        # background (clean builds, 5 pairs: 10.5-11.8 s -> 9.8-11.4 s).
        pool.warm(preload, key=base)
        pool.background(1)
        options = dict(timeout=timeout, threads=FIRST_RUN_THREADS, key=base)
        (firsts,) = pool.run(
            [paths], concurrency=jobs, preload=preload, **options
        )
        firsts = dict(zip(todo, firsts, strict=True))
        for rel, a in firsts.items():  # alone: a failure, a hang, a status
            out[rel] = judge(root, rel, a, a, timeout)
        firsts = {rel: a for rel, a in firsts.items() if out[rel]["ok"]}
        if firsts:
            started = pool.start(
                [root / rel for rel in firsts],
                index=1,  # the seed-1 server
                preload=preload_plan([sources[rel] for rel in firsts]),
                **options,
            )

            def second() -> dict[str, Problem]:
                """{rel: problem} per pair that disagrees, once done."""
                runs = zip(firsts.items(), started.wait(), strict=True)
                verdicts = {rel: judged(rel, a, b) for (rel, a), b in runs}
                return {
                    rel: Problem(*used[rel][0], v["message"], v["detail"])
                    for rel, v in verdicts.items()
                    if not v["ok"]
                }

    elif todo:
        own = pool is None
        if own:
            from .runner import Pool  # only when something must run

            pool = Pool(root)
        try:
            firsts, seconds = pool.run(
                [paths, paths],
                timeout=timeout,
                concurrency=math.ceil(jobs / 2),
                preload=preload,
                key=base,
            )
        finally:
            if own:
                pool.close()
        for rel, a, b in zip(todo, firsts, seconds, strict=True):
            out[rel] = judged(rel, a, b)
    if warm and pool is not None:
        pool.warm(preload_plan(list(sources.values())), key=base)
    return out, unstable, second
