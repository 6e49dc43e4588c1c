"""Exercises: ```exercise fences (YAML) -> interactive HTML widgets.

Plain Python with no MkDocs import. The deck has already found each
page's fences; here each one is validated and rendered::

    result = render_page(slide, url=..., tables=..., fragments=...)
    result.text          # the page's text, fences replaced by placeholders
    result.html          # placeholder -> the exercise's <section>
    result.problems      # every problem, at its file and line
    fill_placeholders(page_html, result.html)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from ..deck import Slide
from ..engine.prose import expand_values
from .fragments import Fragments
from .kinds import KINDS, OPTIONAL, Kind
from .model import Exercise, Problem, Table
from .refs import RefError, RefIndex
from .render import RenderContext, plain_text, render
from .spread import check_spread
from .validate import (
    TableSource,
    TablesUnavailable,
    normalize_tables,
)
from .validate import validate as _validate


def validate(body: str, *, path: str, first_line: int, tables=None):
    """``validate.validate`` with the kinds' registry, which imports
    validate.py and render.py (so neither imports it back)."""
    return _validate(
        body, path=path, first_line=first_line, tables=tables, kinds=KINDS
    )


__all__ = [
    "KINDS",
    "OPTIONAL",
    "Kind",
    "check_spread",
    "Exercise",
    "Fragments",
    "PageResult",
    "Problem",
    "RefError",
    "RefIndex",
    "RenderContext",
    "Table",
    "TablesUnavailable",
    "fill_placeholders",
    "normalize_tables",
    "plain_text",
    "render",
    "render_page",
    "validate",
]


@dataclass
class PageResult:
    text: str
    html: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)


def render_page(
    slide: Slide,
    *,
    url: str,
    fragments: Fragments,
    tables: TableSource = None,
    key_prefix: str = "lesson81",
    values: dict[str, str] | None = None,
    refs: RefIndex | None = None,
) -> PageResult:
    """Validate and render every exercise fence of one page.

    ``url`` goes into each exercise's storage key
    "<key_prefix>:<url>:<n or id>". The returned text is the page's own,
    with each fence replaced by a placeholder paragraph (letters and
    digits only, so Markdown leaves it be) that ``fill_placeholders``
    swaps for the widget once the page is HTML. ``values`` (the
    engine's published values) fill each ``{{ value(id) }}`` in the
    exercise text, which mkdocs-macros never sees.
    ``refs`` resolves the
    ``{{ ref(...) }}`` calls in exercise text (checked deck-wide by
    ``RefIndex.check`` before any page renders).
    """
    result = PageResult(slide.text)
    fences = slide.exercises
    if not fences:
        return result
    lines = list(slide.lines)
    nonce = hashlib.sha256(slide.text.encode()).hexdigest()[:12]
    ids: dict[str, int] = {}
    replaced: list[tuple[int, int, str]] = []
    for n, fence in enumerate(fences, start=1):
        if fence.end is None:
            result.problems.append(
                Problem(
                    slide.path,
                    fence.line,
                    "this ```exercise fence is never closed; expected a "
                    "closing ``` line after its YAML",
                )
            )
            continue
        exercise, problems = validate(
            expand_values(fence.body, values or {}),
            path=slide.path,
            first_line=fence.line,
            tables=tables,
        )
        if exercise is not None and exercise.id:
            if exercise.id in ids:
                problems.append(
                    Problem(
                        slide.path,
                        fence.line,
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
        block, inline = fragments.block, fragments.inline
        if refs is not None:
            page = url[: -len(".html")] + ".md"

            def block(text, _b=fragments.block, _p=page):
                return _b(refs.expand(text, page=_p))

            def inline(text, _i=fragments.inline, _p=page):
                return _i(refs.expand(text, page=_p))

        ctx = RenderContext(
            index=n,
            key=f"{key_prefix}:{url}:{exercise.id or n}",
            block=block,
            inline=inline,
        )
        result.html[token] = render(exercise, ctx, KINDS[exercise.kind])
        replaced.append((fence.start, fence.end, fence.indent + token))
    for start, end, placeholder in reversed(replaced):
        newline = "\r\n" if lines[start].endswith("\r\n") else "\n"
        lines[start : end + 1] = [newline, placeholder + newline, newline]
    result.text = "".join(lines)
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
