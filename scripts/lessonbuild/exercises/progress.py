"""The home page's map of the lesson: each part's length and the
student's progress through its exercises.

The minutes are the speaker notes' own (``**Time:** N min`` in each
slide's instructor notes, read by lessonbuild.deck), added up per part,
so the home page and the deck's timing never disagree. The progress is
the browser's: each exercise's saved answer (localStorage, under the key
its widget uses) says whether it was tried; docs/assets/exercises.js
counts them and offers a reset. Nothing here is typed by hand.
"""

from __future__ import annotations

import html
import json

from ..present import slide_minutes

__all__ = ["exercise_keys", "part_minutes", "parts_overview"]


def part_minutes(part) -> tuple[float, int]:
    """(minutes of the slides that have a Time line, slides without):
    each slide's time as the deck's pacing counts it
    (``present.slide_minutes``, one reader of the notes' times)."""
    times = [slide_minutes(slide) for slide in part.slides]
    return sum(times), sum(1 for t in times if not t)


def exercise_keys(deck, slide, prefix: str) -> list[str]:
    """The storage keys of a slide's exercises, as render_page makes
    them: "<prefix>:<page url>:<id or position>"."""
    from .parse import Mapping, YamlProblem, load_yaml

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


def _minutes(total: float) -> str:
    return f"{total:g} min"


def parts_overview(deck, prefix: str, page_uri: str = "index.md") -> str:
    """HTML: one row per part with its minutes and its exercises'
    storage keys (the script fills in the progress), and a reset."""
    import posixpath

    rows = []
    grand, grand_untimed = 0.0, 0
    for part in deck.parts:
        total, untimed = part_minutes(part)
        grand += total
        grand_untimed += untimed
        keys = [
            k
            for slide in part.slides
            for k in exercise_keys(deck, slide, prefix)
        ]
        first = part.slides[0]
        link = posixpath.relpath(
            deck.docs_rel(first), posixpath.dirname(page_uri) or "."
        )
        minutes = _minutes(total) + (
            f" (+ {untimed} untimed slide{'s' if untimed != 1 else ''})"
            if untimed
            else ""
        )
        rows.append(
            f'<tr data-ex-keys="{html.escape(json.dumps(keys))}">'
            f'<th scope="row"><a href="{html.escape(link)}">'
            f"{html.escape(part.name)}</a></th>"
            f"<td>{first.number}–{part.slides[-1].number}</td>"
            f"<td>{html.escape(minutes)}</td>"
            f'<td class="lesson-parts__done">{len(keys)}</td></tr>'
        )
    total = _minutes(grand) + (
        f" (+ {grand_untimed} untimed)" if grand_untimed else ""
    )
    return (
        '<div class="lesson-parts" markdown="0">'
        '<table><thead><tr><th scope="col">Part</th>'
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
