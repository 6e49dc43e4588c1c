"""Exercises: ```exercise fences (YAML) -> interactive HTML widgets.

Plain Python with no MkDocs import, so a later move to another site
generator touches only the thin adapter in lessonbuild/hooks/.

    result = transform_page(markdown, path=..., url=..., source=...,
                            tables=..., fragments=Fragments(...))
    result.markdown      # fences replaced by placeholder paragraphs
    result.html          # placeholder -> the exercise's <section>
    result.problems      # every problem, as "file:line: message"
    fill_placeholders(page_html, result.html)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from .fragments import Fragments
from .model import Exercise, Problem, Table
from .parse import Fence, find_fences
from .render import LABELS, RenderContext, plain_text, render
from .validate import (
    KINDS,
    OPTIONAL,
    TableSource,
    TablesUnavailable,
    normalize_tables,
    validate,
)

__all__ = [
    "KINDS",
    "LABELS",
    "OPTIONAL",
    "Exercise",
    "Fence",
    "Fragments",
    "PageResult",
    "Problem",
    "RenderContext",
    "Table",
    "TablesUnavailable",
    "fill_placeholders",
    "find_fences",
    "normalize_tables",
    "plain_text",
    "render",
    "table_override",
    "transform_page",
    "use_tables",
    "validate",
]

_table_override: list = []


def use_tables(source) -> None:
    """Serve these tables to fill-in exercises instead of the snippet
    engine's: a mapping {id: {"columns", "rows"}} or a callable returning
    one; None goes back to the engine. For fixture sites and tests."""
    _table_override[:] = [] if source is None else [source]


def table_override():
    """The tables set with use_tables(), or None."""
    if not _table_override:
        return None
    source = _table_override[0]
    return source() if callable(source) else source


# MkDocs' own front-matter pattern (mkdocs.utils.meta.YAML_RE).
_FRONT_MATTER = re.compile(
    r"^-{3}[ \t]*\n(.*?\n)(?:\.{3}|-{3})[ \t]*\n", re.DOTALL
)


@dataclass
class PageResult:
    markdown: str
    html: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)


def _fence_lines(markdown: str, source: str | None, fences: list[Fence]):
    """1-based source-file line of each fence's opening line.

    `markdown` is the page body after front matter (and after any
    template rendering); `source` is the file as written. Fences are
    matched by order when both have the same number of them; otherwise
    the front matter's length is the offset.
    """
    if source is None:
        return [f.start + 1 for f in fences]
    source = source.replace("\r\n", "\n")
    in_source = find_fences(source)
    if len(in_source) == len(fences):
        return [f.start + 1 for f in in_source]
    offset = 0
    if m := _FRONT_MATTER.match(source):
        rest = source[m.end() :]
        offset = source[: m.end()].count("\n")
        offset += len(rest) - len(rest.lstrip("\n"))
    return [offset + f.start + 1 for f in fences]


def transform_page(
    markdown: str,
    *,
    path: str,
    url: str,
    fragments: Fragments,
    source: str | None = None,
    tables: TableSource = None,
    key_prefix: str = "lesson81",
) -> PageResult:
    """Validate and render every exercise fence of one page.

    `path` names the file in problems (e.g. "docs/slides/37-x.md"); `url`
    goes into each exercise's storage key "<key_prefix>:<url>:<n or id>".
    """
    fences = find_fences(markdown)
    result = PageResult(markdown)
    if not fences:
        return result
    lines = markdown.split("\n")
    out: list[str] = []
    done = 0
    ids: dict[str, int] = {}
    # Letters and digits only, so Markdown leaves the placeholder be.
    nonce = hashlib.sha256(markdown.encode()).hexdigest()[:12]
    for n, (fence, line) in enumerate(
        zip(fences, _fence_lines(markdown, source, fences), strict=True),
        start=1,
    ):
        if fence.end is None:
            result.problems.append(
                Problem(
                    path,
                    line,
                    "this ```exercise fence is never closed; expected a "
                    "closing ``` line after its YAML",
                )
            )
            continue
        exercise, problems = validate(
            fence.body, path=path, first_line=line, tables=tables
        )
        if exercise is not None and exercise.id:
            if exercise.id in ids:
                problems.append(
                    Problem(
                        path,
                        line,
                        f"id '{exercise.id}' is also used by exercise "
                        f"{ids[exercise.id]} on this page; expected ids "
                        "unique per page",
                    )
                )
                exercise = None
            else:
                ids[exercise.id] = n
        result.problems.extend(problems)
        if exercise is None:
            continue
        result.exercises.append(exercise)
        token = f"xexercisex{nonce}x{n}x"
        ctx = RenderContext(
            index=n,
            key=f"{key_prefix}:{url}:{exercise.id or n}",
            block=fragments.block,
            inline=fragments.inline,
        )
        result.html[token] = render(exercise, ctx)
        out.extend(lines[done : fence.start])
        out.extend(["", fence.indent + token, ""])
        done = fence.end + 1
    out.extend(lines[done:])
    result.markdown = "\n".join(out)
    result.problems.sort(key=lambda p: p.line)
    return result


def fill_placeholders(
    page_html: str, stash: dict[str, str]
) -> tuple[str, list[str]]:
    """Put each exercise's HTML where its placeholder paragraph ended up.

    Returns the new HTML and the placeholders that were not found.
    """
    missing = []
    for token, section in stash.items():
        pattern = re.compile(rf"(?:<p>\s*)?{token}(?:\s*</p>)?")
        page_html, count = pattern.subn(lambda _m, s=section: s, page_html, 1)
        if not count:
            missing.append(token)
    return page_html, missing
