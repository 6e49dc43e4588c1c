"""The home page's map of the lesson: each part's minutes (the notes'
``**Time:**`` lines, counted as the deck's pacing counts them) and the
storage keys of its exercises, whose saved answers exercises.js counts.
"""

from __future__ import annotations

import html
import json
import posixpath

from ..present import slide_minutes
from ..yamltext import Mapping, YamlProblem, load_yaml


def exercise_keys(deck, slide, prefix: str) -> list[str]:
    """The storage keys of a slide's exercises, as render_page makes them."""
    url = deck.docs_rel(slide)[: -len(".md")] + ".html"
    keys = []
    for n, fence in enumerate(slide.exercises, start=1):
        try:
            data, _ = load_yaml(fence.body)
        except YamlProblem:
            data = None
        ex_id = data.get("id") if isinstance(data, Mapping) else None
        keys.append(f"{prefix}:{url}:{ex_id or n}")
    return keys


def _minutes(times: list[float], noun: str = "") -> str:
    """E.g. "42 min (+ 2 untimed slides)", for slides with no Time line."""
    if untimed := times.count(0):
        plural = "s" if noun and untimed > 1 else ""
        return f"{sum(times):g} min (+ {untimed} untimed{noun}{plural})"
    return f"{sum(times):g} min"


def parts_overview(deck, prefix: str, page_uri: str = "index.md") -> str:
    """HTML: a row per part with its minutes and its exercises' storage
    keys (the script fills in the progress), and a reset."""
    rows, every = [], []
    for part in deck.parts:
        times = [slide_minutes(slide) for slide in part.slides]
        every += times
        keys = [
            k
            for slide in part.slides
            for k in exercise_keys(deck, slide, prefix)
        ]
        first = part.slides[0]
        # Raw HTML: MkDocs rewrites no link in it: the built page's address.
        link = posixpath.relpath(
            deck.docs_rel(first).removesuffix(".md") + ".html",
            posixpath.dirname(page_uri) or ".",
        )
        rows.append(
            f'<tr data-ex-keys="{html.escape(json.dumps(keys))}">'
            f'<th scope="row"><a href="{html.escape(link)}">'
            f"{html.escape(part.name)}</a></th>"
            f"<td>{first.number}–{part.slides[-1].number}</td>"
            f"<td>{html.escape(_minutes(times, ' slide'))}</td>"
            f'<td class="lesson-parts__done">{len(keys)}</td></tr>'
        )
    total = _minutes(every)
    return (
        '<div class="lesson-parts" markdown="0">'
        # (The sidebar's list again: not for search, whose index each
        # first visit downloads.)
        "<table data-search-exclude>"
        '<thead><tr><th scope="col">Part</th>'
        '<th scope="col">Slides</th><th scope="col">Time</th>'
        '<th scope="col">Exercises you answered</th></tr></thead><tbody>'
        + "".join(rows)
        + f'</tbody><tfoot><tr><th scope="row">The whole lesson</th>'
        f"<td>{len(deck.slides)}</td><td>{html.escape(total)}</td>"
        '<td class="lesson-parts__total"></td></tr></tfoot></table>'
        '<p class="lesson-parts__actions" hidden>'
        '<button type="button" class="md-button" '
        "data-lesson-reset>Reset my progress</button> "
        '<span class="ex-sr" role="status" aria-live="polite"></span></p>'
        "</div>"
    )
