"""All math typeset: no TeX-style ``^``/``_`` notation as plain text.

A formula written as text (``W^Q_i``, ``W_O``, ``Q_i·K_i^T``) reads as
code noise and is not what the slide means; it belongs in ``\\(...\\)``
(or in backticks when it is a Python name). This reads every built
slide's visible text, skipping code, KaTeX output and scripts, and
fails on a capital letter with ``^`` or ``_`` notation, naming the slide
and the text around it. (Python identifiers such as ``d_model`` are not
flagged here: they are names, not notation.)
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Where text is code or already math: not checked.
SKIPPED_TAGS = {"script", "style", "code", "pre", "math", "svg", "textarea"}
SKIPPED_CLASSES = {"katex", "arithmatex"}
VOID = {"br", "img", "input", "meta", "link", "hr", "wbr", "source"}
# W^Q, W^Q_i, W_O, K_i, Q_i·K_i^T, T_q: a capital with TeX-ish scripts.
BARE = re.compile(r"\b[A-Z](?:\^|_)\{?[A-Za-z0-9]")


class _Visible(HTMLParser):
    """Text outside code, math and scripts."""

    def __init__(self):
        super().__init__()
        self.skipping = []  # one flag per open element
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        skip = tag in SKIPPED_TAGS or bool(classes & SKIPPED_CLASSES)
        self.skipping.append(skip)

    def handle_endtag(self, tag):
        if tag not in VOID and self.skipping:
            self.skipping.pop()

    def handle_data(self, data):
        if not any(self.skipping):
            self.text.append(data)


def bare_notation(page_html: str) -> list[str]:
    """Each bare ``^``/``_`` formula in the visible text, with context."""
    parser = _Visible()
    parser.feed(page_html)
    text = " ".join("".join(parser.text).split())
    return [
        text[max(0, m.start() - 30) : m.end() + 30]
        for m in BARE.finditer(text)
    ]


def test_detector_finds_bare_notation_and_skips_math_and_code():
    page = (
        "<p>role W^Q_i and W_O here</p><code>W_O(x)</code>"
        '<span class="katex">W^Q_i</span><pre>K_i^T</pre>'
    )
    found = bare_notation(page)
    assert len(found) == 2, found
    assert "W^Q_i" in found[0] and "W_O" in found[1]


def test_every_formula_on_every_slide_is_math(built_site):
    found = {}
    for page in sorted((built_site / "slides").glob("*.html")):
        hits = bare_notation(page.read_text(encoding="utf-8"))
        if hits:
            found[page.name] = hits
    assert not found, (
        "formulas written as plain text; write them as math, \\(W^Q_i\\), "
        "or as code in backticks when they are Python names: "
        + "; ".join(f"{name}: {hits}" for name, hits in found.items())
    )
