"""Hand a matplotlib figure from a snippet to the site build, as SVG.

Figures are snippet output like tables: a snippet draws from the real
tensors and calls ``publish_figure(name, fig, alt=...)``; a slide places
it with ``{{ figure("31_split.layout") }}``. The build runs, caches and
checks figures exactly like tables, and it never commits them.

The SVG is deterministic (a fixed hash salt for element ids, no date, no
version stamp), so the two runs the engine makes of every snippet agree
byte for byte and a rebuild changes nothing. Alt text is required: a
figure a screen reader cannot describe is an error, not a warning.

Run on its own (``python snippets/31_split.py``), no build is listening
and ``publish_figure`` draws nothing at all.
"""

from __future__ import annotations

import io
import json
import os

from .tables import TABLES_ENV

#: Colours that read on white and on Material's dark slate alike.
PALETTE = ["#3f6fd8", "#e0793a", "#2a9d6f", "#c0448f", "#8c6bd1", "#b58b00"]
#: Mid-grey for text and lines: at least 4.5:1 on white and, inverted
#: as docs/assets/figures.css shows a figure in the dark scheme, on
#: Material's slate (#777777 was 4.48 and 4.42).
INK = "#6e6e6e"


def style() -> dict:
    """rcParams for lesson figures: transparent, theme-neutral, fixed.

    Use as ``with matplotlib.rc_context(style()):`` around the drawing.
    """
    from cycler import cycler

    return {
        "svg.hashsalt": "lesson-81",
        "svg.fonttype": "none",  # text stays text: searchable, crisp
        "font.size": 11,
        "figure.facecolor": "none",
        "axes.facecolor": "none",
        "savefig.facecolor": "none",
        "savefig.transparent": True,
        "text.color": INK,
        "axes.labelcolor": INK,
        "axes.edgecolor": INK,
        "xtick.color": INK,
        "ytick.color": INK,
        "axes.prop_cycle": cycler(color=PALETTE),
    }


def to_svg(fig) -> str:
    """The figure as SVG text, with nothing that changes between runs."""
    import matplotlib

    buffer = io.StringIO()
    # Applied here, at save time, whatever the snippet's own rcParams
    # (style() only covers the drawing): the salt seeds the ids of clip
    # paths, fixed so they are the same in every run; text stays <text>
    # (measured: the five lesson figures 241 -> 143 KB, and each
    # snippet 3-20% faster than drawing every glyph's outline).
    with matplotlib.rc_context(
        {"svg.hashsalt": "lesson-81", "svg.fonttype": "none"}
    ):
        fig.savefig(
            buffer,
            format="svg",
            bbox_inches="tight",
            metadata={"Date": None, "Creator": None},
        )
    return buffer.getvalue()


def publish_figure(name: str, fig, *, alt: str, narrow=None) -> None:
    """Record ``fig`` for the build under ``<snippet stem>.<name>``.

    ``alt`` describes what the figure shows, for screen readers and for
    anyone whose images do not load; the build refuses an empty one.
    ``narrow``: the same figure laid out for a phone's column (panels
    stacked, about 3.7 inches wide), shown there instead of ``fig``,
    which a phone would otherwise have to scroll sideways.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            f"figure name must be a Python identifier, got {name!r}"
        )
    path = os.environ.get(TABLES_ENV)
    if not path:
        return
    record = {
        "kind": "figure",
        "name": name,
        "alt": str(alt or "").strip(),
        "svg": to_svg(fig),
    }
    if narrow is not None:
        record["narrow"] = to_svg(narrow)
    with open(path, "a", encoding="utf-8") as sink:
        sink.write(json.dumps(record, ensure_ascii=False) + "\n")
