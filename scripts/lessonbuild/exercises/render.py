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
from .model import Buckets, Check, Eliminate, Exercise, FillIn, Order

__all__ = [
    "RenderContext",
    "buckets_view",
    "choices_view",
    "fill_in_view",
    "order_view",
    "plain_text",
    "render",
    "variant_markup",
]


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


def buckets_view(ex: Buckets, ctx: RenderContext) -> dict:
    flat = []  # (item number, bucket number, item text)
    for b, bucket in enumerate(ex.buckets):
        for item in bucket.items:
            flat.append((len(flat), b, item))
    return {
        "flat": flat,
        "shuffled": _shuffled(flat, "buckets\0" + ex.prompt),
        "names": [Markup(ctx.inline(b.name)) for b in ex.buckets],
    }


def order_view(ex: Order, ctx: RenderContext) -> dict:
    steps = list(enumerate(ex.steps))
    return {"shuffled": _shuffled(steps, "order\0" + ex.prompt)}


#: {name}: where a variant's value goes (not TeX's \text{model}).
_VAR = re.compile(r"(?<![\w\\}])\{([A-Za-z_][A-Za-z0-9_]*)\}")


def variant_markup(
    text: str, to_html: Callable[[str], str], row: dict[str, str] | None
) -> str:
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

    out = to_html(_VAR.sub(token, text))
    for i, name in enumerate(names):
        out = out.replace(
            f"xexvarx{i}x",
            f'<span class="ex-var" data-ex-var="{html.escape(name)}">'
            f"{html.escape(row[name])}</span>",
        )
    return out


def choices_view(ex: Check | Eliminate, ctx: RenderContext) -> dict:
    """A check's or eliminate's variants, as data the script draws from:
    each variant's values by column. Which option is right (survives) is
    the same in every variant (the key's letter); no value says which."""
    if not ex.rows:
        return {"spec": None}
    return {"spec": {"vars": ex.rows}}


def fill_in_view(ex: FillIn, ctx: RenderContext) -> dict:
    """The prompt with the first variant's numbers in place (each in a
    span the script rewrites for another variant), and the spec the
    script judges with: every variant's symbol values and engine answers,
    the random points and the formula's values there, and each wrong
    form's values. No answer is text on the page: the spec is data."""
    prompt = Markup(variant_markup(ex.prompt, ctx.block, ex.rows[0]))
    scopes = []
    for row in ex.rows:
        scope = {}
        for col in ex.symbols:
            parts = answers.split(row[col], False)
            value = answers.values(parts[0], {}) if parts else None
            if isinstance(value, float):
                scope[answers.canonical_symbol(col)] = value
        if "d_k" not in scope and {"d_model", "h"} <= set(scope):
            scope["d_k"] = scope["d_model"] / scope["h"]
        scopes.append(scope)

    def at(text, shape, scope):
        return [answers.values(p, scope) for p in answers.split(text, shape)]

    # Random sizes, but a variant's flags (bias) as the variant has them:
    # "4 d_model^2" is right for a bias-free layer.
    points = [
        [
            {**p, **{k: v for k, v in sc.items() if k == "bias"}}
            for p in ex.points
        ]
        for sc in scopes
    ]

    cells = []
    for cell in ex.cells:
        cells.append(
            {
                "shape": cell.shape,
                "answer": [
                    at(row[cell.column], cell.shape, {}) for row in ex.rows
                ],
                "points": [
                    [at(cell.formula, cell.shape, p) for p in pts]
                    for pts in points
                ],
                "wrong": [
                    {
                        "variants": [
                            at(w.form, cell.shape, s) for s in scopes
                        ],
                        "points": [
                            [at(w.form, cell.shape, p) for p in pts]
                            for pts in points
                        ],
                    }
                    for w in cell.wrong
                ],
            }
        )
    spec = {
        "vars": [{k: row[k] for k in ex.rows[0]} for row in ex.rows],
        "scopes": scopes,
        "points": points,
        "cells": cells,
    }
    return {
        "prompt_html": prompt,
        "spec": spec,
        "labels": [Markup(ctx.inline(c.label)) for c in ex.cells],
    }


@pass_context
def _block(context, text) -> Markup:
    return Markup(context["ctx"].block(text))


@pass_context
def _inline(context, text) -> Markup:
    return Markup(context["ctx"].inline(text))


# One environment, so each template is compiled once per process (a
# per-render overlay compiled them again for every exercise: 1.1 s of a
# 1.8 s render of the deck's exercises). The Markdown filters read the
# exercise's RenderContext from the template's variables.
_ENV = Environment(
    loader=PackageLoader("lessonbuild.exercises", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    keep_trailing_newline=False,
)
_ENV.filters["plain"] = lambda value: plain_text(str(value))
_ENV.filters["block"] = _block
_ENV.filters["inline"] = _inline


@pass_context
def _variant(context, text, how="inline") -> Markup:
    """Markdown with the first variant's values in place (when the
    exercise has variants), for texts that hold {column} placeholders."""
    ctx, rows = context["ctx"], getattr(context["ex"], "rows", None)
    to_html = ctx.inline if how == "inline" else ctx.block
    return Markup(variant_markup(text, to_html, rows[0] if rows else None))


_ENV.filters["variant"] = _variant


def render(ex: Exercise, ctx: RenderContext, kind) -> str:
    """The exercise's HTML (one <section>); ``kind``: its entry in the
    registry (``kinds.KINDS``, which imports this module)."""
    title = Markup(ctx.inline(ex.title)) if ex.title else kind.label
    data = {
        "ex": ex,
        "kind": kind,
        "p": f"ex-{ex.id}" if ex.id else f"ex{ctx.index}",
        "key": ctx.key,
        "title": title,
        "ctx": ctx,  # for the block and inline filters
    }
    if kind.view is not None:
        data.update(kind.view(ex, ctx))
    return _ENV.get_template(kind.template).render(data)
