"""What the search index holds: readable formulas, no widget chrome.

``exclude_from_search`` marks what no student should find by searching
(answers, instructor notes, code, widget controls, notebook chrome);
``readable_index`` writes the index's TeX as text, so a search for
``d_model`` finds ``\\(d_{\\text{model}}\\)``.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from .exercises.render import plain_text

# Opening tags that get data-search-exclude: answers and notes (hidden
# until an attempt), code blocks, and the widgets' controls.
_EXCLUDED = re.compile(
    r'<details class="(?:instructor|verify)"|<section class="after-answer"'
    r'|<div class="highlight"(?=>)'
    r"|<(?:button|select)\b(?![^>]*data-search-exclude)"
)
# Material's search stops skipping at the first inner closing tag of the
# same name, so each element marked holds none of its own tag (tested).
_NOTEBOOK_CHROME = re.compile(
    r'<(div|span|clipboard-copy|a)(?= class="[^"]*\b(?:jp-InputPrompt'
    r"|jp-OutputPrompt|highlight-ipynb|clipboard-copy-txt|cell-tag"
    r"|anchor-link)\b"
    r"|[\s,][^>]*aria-label=\"Copy to Clipboard\")"
)

# A table of numbers: most of its data cells a number or a shape.
_TABLE = re.compile(r"<table\b(?![^>]*data-search-exclude)(.*?)</table>", re.S)
_CELL = re.compile(r"<td\b[^>]*>(.*?)</td>", re.S)
_NUMBER = re.compile(
    r"[\s(\[]*[-+\u2212]?[\d.,]+(?:\s*[,\u2013x\u00d7/]\s*[\d.,]+)*[\s)\]]*%?"
)


def _numbers_only(table: re.Match) -> str:
    """A table of mostly numbers, marked: no one searches for a run of
    digits (1 KB of the index a first visit downloads)."""
    cells = [c for c in map(plain_text, _CELL.findall(table[1])) if c]
    numbers = sum(bool(_NUMBER.fullmatch(c)) for c in cells)
    if not cells or 2 * numbers < len(cells):
        return table[0]
    return "<table data-search-exclude" + table[0][len("<table") :]


def exclude_from_search(html: str, notebook: bool) -> str:
    """``html`` with what search must skip marked ``data-search-exclude``
    (code and Output blocks were a third of the index's text)."""
    html = _EXCLUDED.sub(r"\g<0> data-search-exclude", html)
    html = _TABLE.sub(_numbers_only, html)
    if notebook:
        html = _NOTEBOOK_CHROME.sub(r"<\1 data-search-exclude", html)
    return html


_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
#: A command as the character a reader says (any other: its name).
_SYMBOLS = dict(
    pair.split("=")
    for pair in """cdot=· times=× ldots=… dots=… cdots=… to=→ rightarrow=→
    mapsto=↦ le=≤ leq=≤ ge=≥ geq=≥ ne=≠ neq=≠ approx=≈ equiv=≡ in=∈ infty=∞
    sum=Σ top=ᵀ alpha=α beta=β lambda=λ mu=μ sigma=σ pi=π ell=ℓ""".split()
)
_SUPERSCRIPT = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")
_DROP = re.compile(
    r"\\(?:left|right|big|Big|bigl|bigr|displaystyle|limits|nolimits)\b"
    r"|\\begin\{[a-z*]+\}|\\end\{[a-z*]+\}"
)
_SPACE = re.compile(r"\\[,;:! ]|\\q?quad\b|~|&|\\\\")
_GROUP = r"\{((?:[^{}]|\{[^{}]*\})*)\}"  # one brace level deep
_FONT = r"\\(?:text|mathrm|mathbf|mathit|operatorname|mathcal)"


def tex_to_text(tex: str) -> str:
    """A formula's TeX as the plain text a reader would say for it."""
    s = _DROP.sub("", tex)
    s = _SPACE.sub(" ", s)
    s = s.replace("^\\top", "ᵀ")
    for _ in range(3):  # inside out: \text{} within \frac{}{} and the like
        s = re.sub(_FONT + _GROUP, r"\1", s)
        # \underbrace{X}_{Y}: the term itself; its label is a caption.
        s = re.sub(r"\\underbrace" + _GROUP + r"_" + _GROUP, r"\1", s)
        s = re.sub(r"\\xrightarrow" + _GROUP, r" → ", s)
        s = re.sub(r"\\frac" + _GROUP + _GROUP, r"\1/\2", s)
        s = re.sub(r"\\sqrt" + _GROUP, r"√\1", s)
    s = re.sub(
        r"\^\{?([0-9+-]+)\}?(?![0-9])",
        lambda m: m.group(1).translate(_SUPERSCRIPT),
        s,
    )
    s = re.sub(r"\\([A-Za-z]+|[#%{}_])", lambda m: _SYMBOLS.get(m[1], m[1]), s)
    s = s.replace("{", "").replace("}", "")
    return " ".join(s.split())


def readable(text: str) -> str:
    """The index's HTML with every formula written as text (unescaped
    first: ``&lt;``'s ``&`` is no TeX alignment)."""

    def one(m: re.Match) -> str:
        tex = html.unescape(m.group(1) or m.group(2))
        return html.escape(tex_to_text(tex), quote=False)

    return _MATH.sub(one, text)


def readable_index(config) -> None:
    """Rewrite the TeX in the search plugin's entries, in place."""
    from .private import search_entries

    for entry in search_entries(config):
        for key in ("title", "text"):
            if isinstance(entry.get(key), str):
                entry[key] = readable(entry[key])


def compact_index(site: Path) -> None:
    """The index written again as UTF-8, not ASCII escapes: 1.1 KB less
    for each first visit (``make bench``: 550.3 -> 549.2 KB)."""
    index = site / "search" / "search_index.json"
    if index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        index.write_text(text, encoding="utf-8")
