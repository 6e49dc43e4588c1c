"""Draw a validated exercise as semantic HTML, from Jinja2 templates.

The page reads fine without JavaScript: the answers are in collapsed
<details>, and controls that need the script (exercises.js) are
`hidden`. Templates escape every value; only Markdown this package
rendered goes in as markup. Answer keys carry ``data-search-exclude``.
"""

from __future__ import annotations

import hashlib
import html
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

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


def _shown(items: list, seed: str) -> tuple[list, list]:
    """(number, item) as shown, in a stable shuffle that never keeps the
    given order, and in the key's order: numbered where shown (numbers in
    the key's order gave the answer away in the page's markup).

    Where the items allow (four or more), the shuffle leaves none in its
    place and none right after the one it follows: slide 33's six steps
    were two moves from the answer, one of them "4 of 6 in place"."""
    given = list(enumerate(items))
    shown = list(given)
    digest = hashlib.sha256(seed.encode()).hexdigest()
    rng = random.Random(int(digest[:16], 16))
    for _ in range(1000):
        if shown != given and (len(shown) < 4 or _scrambled(shown)):
            break
        rng.shuffle(shown)
    at = {n: i for i, (n, _) in enumerate(shown)}
    return (
        [(i, item) for i, (_, item) in enumerate(shown)],
        [(at[n], item) for n, item in given],
    )


def _scrambled(shown: list) -> bool:
    """No item in its place, none right after its predecessor."""
    return all(n != i for i, (n, _) in enumerate(shown)) and all(
        b != a + 1 for (a, _), (b, _) in pairwise(shown)
    )


def _buckets_view(ex: Buckets, ctx: RenderContext) -> dict:
    """``flat``: (number, (bucket, text)) in the key's order."""
    flat = [(b, t) for b, bk in enumerate(ex.buckets) for t in bk.items]
    shuffled, flat = _shown(flat, "buckets\0" + ex.prompt)
    names = [Markup(ctx.inline(b.name)) for b in ex.buckets]
    return {"flat": flat, "shuffled": shuffled, "names": names}


def _order_view(ex: Order, ctx: RenderContext) -> dict:
    """``right``: (number, text) in the right order (not ``key``, the
    storage key, which it overwrote)."""
    shuffled, right = _shown(ex.steps, "order\0" + ex.prompt)
    return {"shuffled": shuffled, "right": right}


def _variant_markup(text: str, to_html, row: dict[str, str] | None) -> str:
    """``text`` as HTML with each {name} the variant ``row``'s value, in a
    span the script rewrites for another variant (no ``row``: as it is)."""
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


def fill_in_view(ex: FillIn, ctx: RenderContext) -> dict:
    """The data the script judges with (no answer is text on the page):
    each variant's values and answers, and each formula and wrong form's
    values at the random points."""

    def at(text, shape, scope):
        return [answers.values(p, scope) for p in answers.split(text, shape)]

    # Random sizes, but a variant's flags (bias) as the variant has them:
    # "4 d_model^2" is right for a bias-free layer.
    flags = [{k: v for k, v in sc.items() if k == "bias"} for sc in ex.scopes]
    points = [[{**p, **f} for p in ex.points] for f in flags]

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
    spec = dict(vars=ex.rows, scopes=ex.scopes, points=points, cells=cells)
    return {"spec": spec}


def _choices_view(ex: Choices, ctx: RenderContext) -> dict:
    """A check's or an eliminate's variants (the values each draws), as
    its section's data-ex-spec; none without variants."""
    return {"spec": {"vars": ex.rows} if ex.rows else None}


_VIEWS = {
    "buckets": _buckets_view,
    "order": _order_view,
    "fill-in": fill_in_view,
    "check": _choices_view,
    "eliminate": _choices_view,
}


@pass_context
def _variant(context, text, how="inline") -> Markup:
    """Markdown with the first variant's values in place (when the
    exercise has variants), for texts that hold {column} placeholders."""
    to_html = getattr(context["ctx"], how)
    rows = getattr(context["ex"], "rows", None)
    return Markup(_variant_markup(text, to_html, rows[0] if rows else None))


def _markdown(how: str):
    """A filter: Markdown to HTML by the exercise's RenderContext."""
    return pass_context(
        lambda context, text: Markup(getattr(context["ctx"], how)(text))
    )


# One environment, each template compiled once per process (a per-render
# overlay compiled them for every exercise: 1.1 s of a 1.8 s render). The
# Markdown filters read the exercise's RenderContext from the variables.
_ENV = Environment(
    loader=PackageLoader("lessonbuild.exercises", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
)
_ENV.filters.update(
    plain=lambda value: plain_text(str(value)),
    block=_markdown("block"),
    inline=_markdown("inline"),
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
        "spec": None,  # data the script reads (data-ex-spec), by kind
    }
    if ex.kind in _VIEWS:
        data.update(_VIEWS[ex.kind](ex, ctx))
    return _ENV.get_template(f"{ex.kind}.html").render(data)
