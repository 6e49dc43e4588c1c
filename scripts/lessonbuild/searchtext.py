"""What the search index holds: readable formulas, no widget chrome.

``exclude_from_search`` (before search reads a page) marks with
``data-search-exclude`` what a student must not or never would search
for: instructor notes and "Verify it" folds (answers), code and Output
blocks, the widgets' buttons and drop-downs, and a notebook's prompts,
code cells and copy buttons (its Markdown cells stay searchable).
``readable_index`` (before search writes its index) rewrites the TeX it
holds as text: ``\\(d_k = d_{\\text{model}}/h\\)`` becomes
``d_k = d_model/h``, so a preview reads as the formula and a search
for ``d_model`` finds it.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from .exercises.render import plain_text

# Opening tags that get data-search-exclude (search skips the element
# with everything inside it): the folds a student must not find by
# searching (the instructor notes, each "Verify it" run and the prose
# that answers an exercise, each hidden until that exercise is
# attempted), code blocks, and the widgets' buttons and drop-downs.
_EXCLUDED = re.compile(
    r'<details class="(?:instructor|verify)"|<section class="after-answer"'
    r'|<div class="highlight"(?=>)'
    r"|<(?:button|select)\b(?![^>]*data-search-exclude)"
)
# Material's search parser tracks skipped elements by tag name, so the
# first </div> inside a skipped <div> ends the skipping: each element
# marked here holds no element of its own tag (a test checks the site).
# A code cell is its highlighted copy, its copy button's text and tags;
# a heading's "¶" link (nbconvert's) ended each result's title.
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
    """A table whose data cells are mostly numbers, marked: in search
    they read as a run of digits ("1 512 268,435,456 33,554,432 ..."),
    which no one searches for (1 KB of the index a first visit downloads)."""
    cells = [c for c in map(plain_text, _CELL.findall(table[1])) if c]
    numbers = sum(bool(_NUMBER.fullmatch(c)) for c in cells)
    if not cells or 2 * numbers < len(cells):
        return table[0]
    return "<table data-search-exclude" + table[0][len("<table") :]


def exclude_from_search(html: str, notebook: bool) -> str:
    """``html`` with what search must skip marked ``data-search-exclude``:
    instructor notes and Verify folds, code and Output blocks (a third
    of the index's text, which the first visit to a slide downloads: the
    page weight budget; the code is one click away on its slide), tables
    of numbers, the widgets' controls, and a notebook's prompts and code."""
    html = _EXCLUDED.sub(r"\g<0> data-search-exclude", html)
    html = _TABLE.sub(_numbers_only, html)
    if notebook:
        html = _NOTEBOOK_CHROME.sub(r"<\1 data-search-exclude", html)
    return html


# --- TeX as text ----------------------------------------------------------

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
    """``text`` (the index's HTML) with every ``\\(…\\)`` and ``\\[…\\]``
    written as text. The TeX is HTML-escaped there: read as TeX, the
    ``&`` of ``&amp;`` (an alignment) and ``&lt;`` was a space, and
    results showed "amp;" and "g lt; h"."""

    def one(m: re.Match) -> str:
        tex = html.unescape(m.group(1) or m.group(2))
        return html.escape(tex_to_text(tex), quote=False)

    return _MATH.sub(one, text)


def readable_index(config) -> None:
    """Rewrite the TeX in the search plugin's entries, in place (through
    ``private.search_entries``, the one wrapper of Material's names)."""
    from .private import search_entries

    for entry in search_entries(config):
        for key in ("title", "text"):
            if isinstance(entry.get(key), str):
                entry[key] = readable(entry[key])


def compact_index(site: Path) -> None:
    """Material writes its index with every character outside ASCII
    escaped (``\\u2014``: six bytes where UTF-8 takes three). Written
    again as UTF-8, the index each first visit downloads is 1.1 KB
    smaller (``make bench``'s page weight row: 550.3 -> 549.2 KB)."""
    index = site / "search" / "search_index.json"
    if index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        index.write_text(text, encoding="utf-8")
