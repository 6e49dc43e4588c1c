"""Draw a validated exercise as semantic HTML.

Everything a student needs is in the markup: the question, every option,
and (inside collapsed <details>) the answer and explanations, so the page
reads fine without JavaScript. Controls that only make sense with
JavaScript (inputs, buttons, selects) carry `hidden`; exercises.js shows
them and reads the answers back from the <details> it finds.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from .model import (
    Buckets,
    Check,
    Discussion,
    Eliminate,
    Exercise,
    FillIn,
    Order,
    Predict,
)

__all__ = ["LABELS", "RenderContext", "plain_text", "render"]

# The widget's label when the exercise sets no `title`.
LABELS = {
    "predict": "Predict first",
    "check": "Check",
    "eliminate": "Eliminate the wrong options",
    "buckets": "Sort into buckets",
    "order": "Put in order",
    "fill-in": "Fill in",
    "discussion": "Discussion",
}


@dataclass
class RenderContext:
    """Where the exercise sits and how to turn its Markdown into HTML."""

    index: int  # 1-based position among the page's exercises
    key: str  # localStorage key, e.g. "lesson81:slides/37-x.html:1"
    block: Callable[[str], str]  # Markdown -> block HTML
    inline: Callable[[str], str]  # Markdown -> inline HTML (no <p>)


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


_TAG = re.compile(r"<[^>]+>")
_MATH = re.compile(r"\\[()\[\]]")


def plain_text(fragment_html: str) -> str:
    """Text of rendered HTML for places that take no markup (<option>)."""
    text = html.unescape(_TAG.sub("", fragment_html))
    return " ".join(_MATH.sub("", text).split())


def _shuffled(items: list, seed: str) -> list:
    """A stable shuffle (same page, same order) that never keeps the
    given order when there are two or more items."""
    order = list(items)
    if len(order) < 2:
        return order
    digest = hashlib.sha256(seed.encode()).hexdigest()
    rng = random.Random(int(digest[:16], 16))
    while True:
        rng.shuffle(order)
        if order != items:
            return order


def render(ex: Exercise, ctx: RenderContext) -> str:
    """The exercise's HTML (one <section>)."""
    p = f"ex-{ex.id}" if ex.id else f"ex{ctx.index}"
    draw = _DRAW[ex.kind]
    body, actions, key = draw(ex, ctx, p)
    title = html.escape(ex.title) if ex.title else LABELS[ex.kind]
    if ex.title:
        title = ctx.inline(ex.title)
    buttons = "".join(
        f'<button type="button" class="ex-btn ex-btn--primary" '
        f'data-ex-action="{name}">{label}</button>'
        for name, label in actions
    )
    buttons += (
        '<button type="button" class="ex-btn ex-btn--reset" '
        'data-ex-action="reset">Reset<span class="ex-sr"> this '
        "exercise</span></button>"
    )
    return (
        f'<section class="exercise ex-{ex.kind}" id="{p}" '
        f'data-ex-kind="{ex.kind}" data-ex-key="{_attr(ctx.key)}" '
        f'aria-labelledby="{p}-label">\n'
        f'<p class="ex-label" id="{p}-label">{title}</p>\n'
        f"{body}\n"
        f'<div class="ex-actions" hidden>{buttons}</div>\n'
        '<div class="ex-feedback" hidden></div>\n'
        '<p class="ex-live ex-sr" role="status" aria-live="polite" '
        'aria-atomic="true"></p>\n'
        f"{key}\n"
        "</section>"
    )


def _prompt(ctx: RenderContext, text: str) -> str:
    return f'<div class="ex-prompt">\n{ctx.block(text)}\n</div>'


def _details(cls: str, summary: str, inner: str) -> str:
    return (
        f'<details class="{cls}">\n<summary>{summary}</summary>\n'
        f"{inner}\n</details>"
    )


def _predict(ex: Predict, ctx: RenderContext, p: str):
    body = (
        _prompt(ctx, ex.prompt) + f'\n<div class="ex-predict" hidden>'
        f'<label class="ex-field-label" for="{p}-input">Your prediction'
        "</label>"
        f'<textarea class="ex-input" id="{p}-input" rows="2" '
        'spellcheck="false"></textarea></div>'
    )
    key = (
        _details(
            "success ex-key ex-key--answer",
            "Correct",
            f'<div class="ex-key__answer">\n{ctx.block(ex.answer)}\n</div>',
        )
        + "\n"
        + _details(
            "info ex-key ex-key--why",
            "Why",
            f'<div class="ex-key__why">\n{ctx.block(ex.why)}\n</div>',
        )
    )
    return body, [("commit", "Commit prediction")], key


def _options_key(ex: Check | Eliminate, ctx: RenderContext) -> str:
    right = next(o for o in ex.options if o.correct)
    lead = "Answer" if ex.kind == "check" else "Survives elimination"
    notes = []
    for o in ex.options:
        if o.correct or not o.note:
            continue
        head = (
            f"Why {o.letter} tempts people"
            if ex.kind == "check"
            else f"What rules out {o.letter}"
        )
        notes.append(
            f'<dt data-ex-option="{o.letter}">{head}</dt>'
            f'<dd data-ex-option="{o.letter}">\n{ctx.block(o.note)}\n</dd>'
        )
    inner = (
        f'<p class="ex-key__answer" data-ex-answer="{right.letter}">'
        f"<strong>{lead}: {right.letter}</strong> — "
        f"{ctx.inline(right.text)}</p>\n"
        f'<div class="ex-key__explanation">\n{ctx.block(ex.explanation)}\n'
        "</div>"
    )
    if notes:
        inner += '\n<dl class="ex-key__notes">\n' + "\n".join(notes)
        inner += "\n</dl>"
    return _details("success ex-key", "Answer and explanation", inner)


def _check(ex: Check, ctx: RenderContext, p: str):
    items = []
    for o in ex.options:
        items.append(
            f'<li class="ex-option" data-ex-option="{o.letter}">'
            f'<label class="ex-option__label">'
            f'<input type="radio" class="ex-radio" name="{p}-choice" '
            f'value="{o.letter}" hidden>'
            f'<span class="ex-letter">{o.letter}.</span> '
            f'<span class="ex-option__text">{ctx.inline(o.text)}</span>'
            '</label><span class="ex-mark"></span></li>'
        )
    body = (
        _prompt(ctx, ex.question)
        + '\n<fieldset class="ex-options"><legend class="ex-sr">Options'
        '</legend>\n<ul class="ex-option-list">\n'
        + "\n".join(items)
        + "\n</ul></fieldset>"
    )
    return body, [("check", "Check")], _options_key(ex, ctx)


def _eliminate(ex: Eliminate, ctx: RenderContext, p: str):
    items = []
    for o in ex.options:
        items.append(
            f'<li class="ex-option" data-ex-option="{o.letter}">'
            f'<span class="ex-letter">{o.letter}.</span> '
            f'<span class="ex-option__text">{ctx.inline(o.text)}</span>'
            '<span class="ex-mark"></span>'
            '<button type="button" class="ex-btn ex-btn--small" '
            f'data-ex-action="strike" data-ex-option="{o.letter}" hidden>'
            f'Strike<span class="ex-sr"> option {o.letter}</span>'
            "</button></li>"
        )
    body = (
        _prompt(ctx, ex.question)
        + '\n<ul class="ex-option-list">\n'
        + "\n".join(items)
        + "\n</ul>"
    )
    return body, [], _options_key(ex, ctx)


def _buckets(ex: Buckets, ctx: RenderContext, p: str):
    flat = []  # (item number, bucket number, item text)
    for b, bucket in enumerate(ex.buckets):
        for item in bucket.items:
            flat.append((len(flat), b, item))
    names = [ctx.inline(b.name) for b in ex.buckets]
    choices = '<option value="">Choose a bucket…</option>' + "".join(
        f'<option value="{b}">{_attr(plain_text(name))}</option>'
        for b, name in enumerate(names)
    )
    items = []
    shuffled = _shuffled(flat, "buckets\0" + ex.prompt)
    for n, _, item in shuffled:
        items.append(
            f'<li class="ex-item" data-ex-item="{n}">'
            '<span class="ex-handle" aria-hidden="true" hidden '
            'title="Drag to a bucket"></span>'
            f'<span class="ex-item__text" id="{p}-item{n}">'
            f"{ctx.inline(item)}</span>"
            f'<select class="ex-select" '
            f'aria-labelledby="{p}-for {p}-item{n}" hidden>'
            f"{choices}</select>"
            '<span class="ex-mark"></span></li>'
        )
    zones = []
    for b, name in enumerate(names):
        zones.append(
            f'<div class="ex-zone" data-ex-zone="{b}">'
            f'<p class="ex-zone__name" id="{p}-zone{b}">{name}</p>'
            f'<ul class="ex-items" aria-labelledby="{p}-zone{b}"></ul>'
            '<div class="ex-zone__explanation" hidden></div></div>'
        )
    # Buckets first, the unsorted items below them: after a keyboard user
    # files an item, Tab moves on towards the items still to sort.
    body = (
        _prompt(ctx, ex.prompt)
        + '\n<div class="ex-board">'
        + f'<span id="{p}-for" hidden>Bucket for</span>'
        + '<div class="ex-zones" role="group" aria-label="Buckets">'
        + "".join(zones)
        + "</div>"
        + '<div class="ex-zone ex-zone--pool" data-ex-zone="">'
        f'<p class="ex-zone__name" id="{p}-pool">Items to sort</p>'
        f'<ul class="ex-items" aria-labelledby="{p}-pool">\n'
        + "\n".join(items)
        + "\n</ul></div></div>"
    )
    groups = []
    for b, (bucket, name) in enumerate(zip(ex.buckets, names, strict=True)):
        lis = "".join(
            f'<li data-ex-item="{n}">{ctx.inline(item)}</li>'
            for n, bb, item in flat
            if bb == b
        )
        groups.append(
            f'<div class="ex-key__group" data-ex-bucket="{b}">'
            f'<p class="ex-key__name"><strong>{name}</strong></p>'
            f"<ul>{lis}</ul>"
            f'<div class="ex-key__explanation">\n'
            f"{ctx.block(bucket.explanation)}\n</div></div>"
        )
    key = _details("success ex-key", "Answer: the groups", "\n".join(groups))
    return body, [("check", "Check")], key


def _order(ex: Order, ctx: RenderContext, p: str):
    steps = list(enumerate(ex.steps))
    shuffled = _shuffled(steps, "order\0" + ex.prompt)
    items = []
    for n, step in shuffled:
        items.append(
            f'<li class="ex-step" data-ex-step="{n}">'
            '<span class="ex-handle" aria-hidden="true" hidden '
            'title="Drag to reorder"></span>'
            f'<span class="ex-step__text" id="{p}-step{n}">'
            f"{ctx.inline(step)}</span>"
            '<span class="ex-mark"></span>'
            '<span class="ex-moves" hidden>'
            '<button type="button" class="ex-btn ex-btn--icon" '
            f'data-ex-action="up" aria-describedby="{p}-step{n}">'
            '<span aria-hidden="true">↑</span>'
            '<span class="ex-sr">Move up</span></button>'
            '<button type="button" class="ex-btn ex-btn--icon" '
            f'data-ex-action="down" aria-describedby="{p}-step{n}">'
            '<span aria-hidden="true">↓</span>'
            '<span class="ex-sr">Move down</span></button>'
            "</span></li>"
        )
    body = (
        _prompt(ctx, ex.prompt)
        + '\n<ol class="ex-steps">\n'
        + "\n".join(items)
        + "\n</ol>"
    )
    key_steps = "".join(
        f'<li data-ex-step="{n}">{ctx.inline(step)}</li>' for n, step in steps
    )
    key = _details(
        "success ex-key",
        "Answer: the order, and why",
        f'<ol class="ex-key__steps">{key_steps}</ol>\n'
        f'<div class="ex-key__why">\n{ctx.block(ex.why)}\n</div>',
    )
    return body, [("check", "Check order")], key


def _fill_in(ex: FillIn, ctx: RenderContext, p: str):
    table = ex.data
    hidden = ex.hidden
    label_col = 1 if hidden == 0 else 0
    head = "".join(
        f'<th scope="col" id="{p}-col{i}">{html.escape(c)}</th>'
        for i, c in enumerate(table.columns)
    )
    rows = []
    key_rows = []
    for r, row in enumerate(table.rows):
        cells = []
        key_cells = []
        for i, value in enumerate(row):
            # Table cells are data (the snippet's str(cell)), not Markdown.
            shown = html.escape(value)
            if i == hidden:
                cells.append(
                    f'<td class="ex-blank" data-ex-row="{r}">'
                    '<span class="ex-blank__nojs">?</span>'
                    f'<input type="text" class="ex-cell" id="{p}-cell{r}" '
                    f'aria-labelledby="{p}-col{i} {p}-row{r}" hidden '
                    'autocomplete="off" autocapitalize="off" '
                    'spellcheck="false">'
                    '<span class="ex-mark"></span></td>'
                )
                key_cells.append(
                    f'<td data-ex-row="{r}" '
                    f'data-ex-value="{_attr(value)}">'
                    f"<strong>{shown}</strong></td>"
                )
            elif i == label_col:
                cells.append(f'<th scope="row" id="{p}-row{r}">{shown}</th>')
                key_cells.append(f'<th scope="row">{shown}</th>')
            else:
                cells.append(f"<td>{shown}</td>")
                key_cells.append(f"<td>{shown}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
        key_rows.append("<tr>" + "".join(key_cells) + "</tr>")
    key_head = "".join(
        f'<th scope="col">{html.escape(c)}</th>' for c in table.columns
    )
    body = (
        _prompt(ctx, ex.prompt)
        + f'\n<div class="ex-table" data-ex-table="{_attr(ex.table)}">'
        f"<table><thead><tr>{head}</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )
    key = _details(
        "success ex-key",
        f"Answer: the {html.escape(ex.column)} column",
        f'<div class="ex-table"><table><thead><tr>{key_head}</tr>'
        "</thead><tbody>" + "".join(key_rows) + "</tbody></table></div>",
    )
    return body, [("check", "Check")], key


def _discussion(ex: Discussion, ctx: RenderContext, p: str):
    body = (
        _prompt(ctx, ex.prompt) + '\n<div class="ex-notes" hidden>'
        f'<label class="ex-field-label" for="{p}-notes">Your notes '
        '<span class="ex-field-hint">(kept in this browser)</span>'
        f'</label><textarea class="ex-input" id="{p}-notes" rows="3">'
        "</textarea></div>"
    )
    key = (
        _details(
            "tip ex-key ex-key--hint",
            "Hint",
            f'<div class="ex-key__hint">\n{ctx.block(ex.hint)}\n</div>',
        )
        + "\n"
        + _details(
            "success ex-key ex-key--answer",
            "Model answer",
            f'<div class="ex-key__answer">\n{ctx.block(ex.answer)}\n</div>',
        )
    )
    return body, [], key


_DRAW = {
    "predict": _predict,
    "check": _check,
    "eliminate": _eliminate,
    "buckets": _buckets,
    "order": _order,
    "fill-in": _fill_in,
    "discussion": _discussion,
}
