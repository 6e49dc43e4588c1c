"""Draw a validated exercise as semantic HTML, from Jinja2 templates.

Everything a student needs is in the markup: the question, every option,
and (inside collapsed <details>) the answer and explanations, so the page
reads fine without JavaScript. Controls that only make sense with
JavaScript (inputs, buttons, selects) carry `hidden`; exercises.js shows
them and reads the answers back from the <details> it finds.

The templates (templates/<kind>.html) escape every value by default;
only Markdown this package rendered (the ``block`` and ``inline``
filters) goes in as markup. Answer keys carry ``data-search-exclude`` so
the site's search index never holds an answer.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context
from markupsafe import Markup

from . import answers
from .model import PLACEHOLDER, Buckets, Choices, Exercise, FillIn, Order


@dataclass
class RenderContext:
    """Where the exercise sits and how to turn its Markdown into HTML."""

    index: int  # 1-based position among the page's exercises
    key: str  # localStorage key, e.g. "lesson81:slides/37-x.html:1"
    block: Callable[[str], str]  # Markdown -> block HTML
    inline: Callable[[str], str]  # Markdown -> inline HTML (no <p>)


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


def _buckets_view(ex: Buckets, ctx: RenderContext) -> dict:
    """The items shuffled, each numbered where it is shown (numbers in
    the key's order grouped them for anyone reading the page's markup);
    ``flat``: (number, bucket, text) in the key's order."""
    flat = [
        (b, item)
        for b, bucket in enumerate(ex.buckets)
        for item in bucket.items
    ]
    shown = _shuffled(list(enumerate(flat)), "buckets\0" + ex.prompt)
    at = {n: i for i, (n, _) in enumerate(shown)}
    return {
        "flat": [(at[n], b, item) for n, (b, item) in enumerate(flat)],
        "shuffled": [(i, b, item) for i, (_, (b, item)) in enumerate(shown)],
        "names": [Markup(ctx.inline(b.name)) for b in ex.buckets],
    }


def _order_view(ex: Order, ctx: RenderContext) -> dict:
    """The steps shuffled, each numbered where it is shown (numbered in
    the right order, the markup gave the order away); ``right``: (number,
    text) in the right order. (Not named ``key``: that is the storage
    key, which it overwrote, so the answer was the section's
    data-ex-key and progress never counted the exercise.)"""
    shown = _shuffled(list(enumerate(ex.steps)), "order\0" + ex.prompt)
    at = {n: i for i, (n, _) in enumerate(shown)}
    return {
        "shuffled": [(i, step) for i, (_, step) in enumerate(shown)],
        "right": [(at[n], step) for n, step in enumerate(ex.steps)],
    }


def _variant_markup(text: str, to_html, row: dict[str, str] | None) -> str:
    """``text`` as HTML with each {name} the variant ``row``'s value, in a
    span the script rewrites when "Try another" draws another variant
    (``row`` None: no variants, the text as it is)."""
    if row is None:
        return to_html(text)
    # {name} becomes a token Markdown leaves alone (attr_list would read
    # a trailing "{h}" as attributes), then the variant's span.
    names: list[str] = []

    def token(m: re.Match) -> str:
        names.append(m[1])
        return f"xexvarx{len(names) - 1}x"

    out = to_html(PLACEHOLDER.sub(token, text))
    for i, name in enumerate(names):
        out = out.replace(
            f"xexvarx{i}x",
            f'<span class="ex-var" data-ex-var="{html.escape(name)}">'
            f"{html.escape(row[name])}</span>",
        )
    return out


def _choices_view(ex: Choices, ctx: RenderContext) -> dict:
    """A check's or eliminate's variants, as data the script draws from:
    each variant's values by column. Which option is right (survives) is
    the same in every variant (the key's letter); no value says which."""
    return {"spec": {"vars": ex.rows} if ex.rows else None}


def fill_in_view(ex: FillIn, ctx: RenderContext) -> dict:
    """The prompt with the first variant's numbers in place (each in a
    span the script rewrites for another variant), and the spec the
    script judges with: every variant's symbol values and engine answers,
    the random points and the formula's values there, and each wrong
    form's values. No answer is text on the page: the spec is data."""

    def at(text, shape, scope):
        return [answers.values(p, scope) for p in answers.split(text, shape)]

    # Random sizes, but a variant's flags (bias) as the variant has them:
    # "4 d_model^2" is right for a bias-free layer.
    points = [
        [
            {**p, **{k: v for k, v in sc.items() if k == "bias"}}
            for p in ex.points
        ]
        for sc in ex.scopes
    ]

    def at_points(text, shape):
        return [[at(text, shape, p) for p in pts] for pts in points]

    cells = [
        {
            "shape": cell.shape,
            # The symbol a cell asks for (its column names one): not an
            # answer in that cell.
            "asks": answers.canonical_symbol(cell.column),
            "answer": [
                at(row[cell.column], cell.shape, {}) for row in ex.rows
            ],
            "points": at_points(cell.formula, cell.shape),
            "wrong": [
                {
                    "variants": [at(w.form, cell.shape, s) for s in ex.scopes],
                    "points": at_points(w.form, cell.shape),
                }
                for w in cell.wrong
            ],
        }
        for cell in ex.cells
    ]
    spec = {
        "vars": [{k: row[k] for k in ex.rows[0]} for row in ex.rows],
        "scopes": ex.scopes,
        "points": points,
        "cells": cells,
    }
    prompt = _variant_markup(ex.prompt, ctx.block, ex.rows[0])
    return {
        "prompt_html": Markup(prompt),
        "spec": spec,
        "labels": [Markup(ctx.inline(c.label)) for c in ex.cells],
    }


_VIEWS = {
    "check": _choices_view,
    "eliminate": _choices_view,
    "buckets": _buckets_view,
    "order": _order_view,
    "fill-in": fill_in_view,
}


@pass_context
def _block(context, text) -> Markup:
    return Markup(context["ctx"].block(text))


@pass_context
def _inline(context, text) -> Markup:
    return Markup(context["ctx"].inline(text))


@pass_context
def _variant(context, text, how="inline") -> Markup:
    """Markdown with the first variant's values in place (when the
    exercise has variants), for texts that hold {column} placeholders."""
    ctx, rows = context["ctx"], getattr(context["ex"], "rows", None)
    to_html = ctx.inline if how == "inline" else ctx.block
    return Markup(_variant_markup(text, to_html, rows[0] if rows else None))


# One environment, so each template is compiled once per process (a
# per-render overlay compiled them again for every exercise: 1.1 s of a
# 1.8 s render of the deck's exercises). The Markdown filters read the
# exercise's RenderContext from the template's variables.
_ENV = Environment(
    loader=PackageLoader("lessonbuild.exercises", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
)
_ENV.filters.update(
    plain=lambda value: plain_text(str(value)),
    block=_block,
    inline=_inline,
    variant=_variant,
)


def render(ex: Exercise, ctx: RenderContext) -> str:
    """The exercise's HTML (one <section>)."""
    data = {
        "ex": ex,
        "p": f"ex-{ex.id}" if ex.id else f"ex{ctx.index}",
        "key": ctx.key,
        "title": Markup(ctx.inline(ex.title)) if ex.title else ex.label,
        "ctx": ctx,  # for the Markdown filters
    }
    if ex.kind in _VIEWS:
        data.update(_VIEWS[ex.kind](ex, ctx))
    return _ENV.get_template(f"{ex.kind}.html").render(data)
