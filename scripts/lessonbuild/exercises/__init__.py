"""Exercises: ```exercise fences (YAML) -> interactive HTML widgets.

Plain Python with no MkDocs import: ``render_page`` validates and renders
the fences the deck found, leaving placeholders that ``fill_placeholders``
swaps for the widgets once the page is HTML. The modules, each importing
only those before it: answers, model (the kinds), validate, render, refs
(references by id), spread, fragments, progress.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import partial

from ..deck import Slide
from ..engine.prose import expand_values
from ..problems import Problem
from .fragments import Fragments
from .model import KINDS, Exercise
from .refs import RefError, RefIndex, mark_letters
from .render import RenderContext, render
from .spread import check_spread
from .validate import TableSource, TablesUnavailable, validate

__all__ = [
    "KINDS",
    "UNCLOSED",
    "Fragments",
    "PageResult",
    "RefError",
    "RefIndex",
    "RenderContext",
    "TablesUnavailable",
    "check_spread",
    "fill_placeholders",
    "render",
    "render_page",
    "validate",
]

UNCLOSED = (
    "this ```exercise fence is never closed; expected a closing ``` line "
    "after its YAML"
)


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

    Each fence becomes a placeholder paragraph (letters and digits, which
    Markdown leaves be); each storage key is "<key_prefix>:<url>:<n or
    id>". ``values`` fill the ``{{ value(id) }}`` and ``refs`` the
    ``{{ ref(...) }}`` of exercise text, which mkdocs-macros never sees.
    """
    result = PageResult(slide.text)
    if not slide.exercises:
        return result
    lines = list(slide.lines)
    nonce = hashlib.sha256(slide.text.encode()).hexdigest()[:12]
    page = url[: -len(".html")] + ".md"

    def markup(to_html, text: str) -> str:  # references resolved
        if refs is not None:
            text = refs.expand(text, page=page)
        return mark_letters(to_html(text))

    block = partial(markup, fragments.block)
    inline = partial(markup, fragments.inline)
    ids: dict[str, int] = {}  # exercise id -> its number on the page
    replaced: list[tuple[int, int, str]] = []  # (first, last line, token)
    for n, fence in enumerate(slide.exercises, start=1):
        if fence.end is None:
            result.problems.append(Problem(slide.path, fence.line, UNCLOSED))
            continue
        exercise, problems = validate(
            expand_values(fence.body, values or {}),
            path=slide.path,
            first_line=fence.line,
            tables=tables,
            values=values,
        )
        if exercise is not None and exercise.id in ids:
            message = (
                f"id '{exercise.id}' is also used by exercise "
                f"{ids[exercise.id]} on this page; expected ids unique per "
                "page"
            )
            problems.append(Problem(slide.path, fence.line, message))
            exercise = None
        result.problems.extend(problems)
        if exercise is None:
            continue
        if exercise.id:
            ids[exercise.id] = n
        result.exercises.append(exercise)
        key = f"{key_prefix}:{url}:{exercise.id or n}"
        token = f"xexercisex{nonce}x{n}x"
        result.html[token] = render(
            exercise, RenderContext(n, key, block, inline)
        )
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
    """Put each exercise's HTML where its placeholder paragraph ended up:
    the new HTML, and the placeholders that were not found."""
    missing = []
    for token, section in stash.items():
        pattern = re.compile(rf"(?:<p>\s*)?{token}(?:\s*</p>)?")
        page_html, count = pattern.subn(lambda _m, s=section: s, page_html, 1)
        if not count:
            missing.append(token)
    return page_html, missing
