"""The home page's map of the lesson: each part's length and the
student's progress through its exercises.

The minutes are the speaker notes' own (``**Time:** N min``), added up
per part as the deck's pacing counts them (``present.slide_minutes``),
so the home page and the deck's timing never disagree. The progress is
the browser's: each exercise's saved answer (localStorage, under the key
its widget uses) says whether it was tried; docs/assets/exercises.js
counts them and offers a reset. Nothing here is typed by hand.
"""

from __future__ import annotations

import html
import json
import posixpath

from ..present import slide_minutes
from ..yamltext import Mapping, YamlProblem, load_yaml


def exercise_keys(deck, slide, prefix: str) -> list[str]:
    """The storage keys of a slide's exercises, as render_page makes
    them: "<prefix>:<page url>:<id or position>"."""
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


def _untimed(count: int, what: str) -> str:
    """How many slides have no Time line, e.g. " (+ 2 untimed slides)"."""
    return f" (+ {count} untimed{what})" if count else ""


def parts_overview(deck, prefix: str, page_uri: str = "index.md") -> str:
    """HTML: one row per part with its minutes and its exercises'
    storage keys (the script fills in the progress), and a reset."""
    rows = []
    grand, grand_untimed = 0.0, 0
    for part in deck.parts:
        times = [slide_minutes(slide) for slide in part.slides]
        total, untimed = sum(times), times.count(0)
        grand += total
        grand_untimed += untimed
        keys = [
            k
            for slide in part.slides
            for k in exercise_keys(deck, slide, prefix)
        ]
        first = part.slides[0]
        # Raw HTML: MkDocs rewrites no link in it, so this is the built
        # page's address, not its source's.
        link = posixpath.relpath(
            deck.docs_rel(first).removesuffix(".md") + ".html",
            posixpath.dirname(page_uri) or ".",
        )
        plural = " slides" if untimed != 1 else " slide"
        minutes = f"{total:g} min" + _untimed(untimed, plural)
        rows.append(
            f'<tr data-ex-keys="{html.escape(json.dumps(keys))}">'
            f'<th scope="row"><a href="{html.escape(link)}">'
            f"{html.escape(part.name)}</a></th>"
            f"<td>{first.number}–{part.slides[-1].number}</td>"
            f"<td>{html.escape(minutes)}</td>"
            f'<td class="lesson-parts__done">{len(keys)}</td></tr>'
        )
    total = f"{grand:g} min" + _untimed(grand_untimed, "")
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
