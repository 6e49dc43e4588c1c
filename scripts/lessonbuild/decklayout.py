"""One rendered slide -> the screens the deck shows, decided at build time.

The slide's stage markers (deck.py) say what is on stage: ``reading``
blocks are dropped, a ``screen-break`` starts a screen, each fold becomes
a step laid over the stage, and ``steps`` blocks are talked through item
by item or statement by statement. Nothing is measured in the browser:
tests/browser/test_present.py names a slide that does not fit 1280x720.
One page holds every slide, so ids get the slide's prefix and exercise
keys ``deck/`` (the tab's sessionStorage).
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, takewhile

from bs4 import BeautifulSoup, Tag

from .deck import AFTER_ANSWER, READING, SCREEN_BREAK, STEPS

#: The author's reading blocks, and the plugin's notebook download link.
READING_ONLY = frozenset((READING, "notebook-download"))
DECK_KEY = "deck/"
#: Attributes that hold ids, separated by spaces.
ID_REFS = (
    "for aria-labelledby aria-describedby aria-controls aria-owns "
    "aria-activedescendant list headers"
).split()
URL_ATTRS = {"a": "href", "img": "src", "source": "src", "object": "data"}
#: Longest item (characters) of a sorting exercise laid out in two columns.
SHORT_ITEM = 48


@dataclass(frozen=True)
class Layout:
    screens: tuple[str, ...]  # each screen's body HTML, in order
    notes: str  # the instructor notes' HTML ("" when none)
    steps: int  # fragments over all screens (read by the tests)


@functools.lru_cache(maxsize=256)
def lay_out(html: str, *, number: int, page_url: str) -> Layout:
    """The screens of one slide from its rendered reading-page content.
    Cached: re-laying out the untouched slides was most of a ``make serve``
    slide edit's time (the bench's serve rows)."""
    soup = BeautifulSoup(html, "html.parser")
    for link in _tags(soup, "a", "headerlink"):
        link.decompose()
    _walk_through(soup)  # before the line anchors go: it reads them
    for link in filter(_is_line_anchor, _tags(soup, "a")):
        link.decompose()  # nothing cites a line of a screen
    # The stage is 1280x720 in any window: no phone layout of a figure.
    for picture in _tags(soup, "picture"):
        for source in _tags(picture, "source"):
            source.decompose()
        picture.unwrap()
    notes = []
    for box in _tags(soup, "details", "instructor"):
        if summary := box.find("summary"):
            summary.decompose()
        _rebase_links(box, page_url)  # the speaker view is the deck's too
        notes.append(box.decode_contents())
        box.decompose()
    # Listed first: a decomposed block's descendants have no attributes.
    for block in [b for b in _tags(soup) if READING_ONLY & set(_classes(b))]:
        block.decompose()
    for block in _tags(soup, None, AFTER_ANSWER):
        block.unwrap()  # the presenter shows it when the class has answered
    _folds_to_steps(soup)
    _mark_steps(soup)
    _unsection_exercises(soup)
    _unique_ids(soup, f"s{number}-")
    _rebase_links(soup, page_url)
    screens, steps = [], 0
    for screen in _cut_screens(soup):
        _no_opening_gap(screen)
        _keys_last(screen)
        # A list item in two ``steps`` wrappers is marked, and counted, twice.
        steps += sum(el["class"].count("fragment") for el in _steps(screen))
        screens.append(
            "".join(str(n) for n in screen if isinstance(n, Tag) or n.strip())
        )
    return Layout(tuple(screens), "".join(notes), steps)


def _tags(root: Tag, name: str | None = None, cls: str | None = None):
    """The tags under ``root``, of ``name`` and class ``cls`` when given:
    a list (callers remove tags), and a plain walk, as ``find_all``'s
    filters took a third of the deck's layout."""
    return [
        n
        for n in root.descendants
        if isinstance(n, Tag)
        and (name is None or n.name == name)
        and (cls is None or cls in _classes(n))
    ]


def _classes(el: Tag) -> list[str]:
    return el.get("class") or []


def _add_class(el: Tag, *names: str) -> None:
    el["class"] = [*_classes(el), *names]


def _is_line_anchor(node) -> bool:
    """pymdownx's anchor that starts a code line (a string's name: None)."""
    return node.name == "a" and node.get("id", "").startswith("__codelineno-")


def _folds_to_steps(soup: BeautifulSoup) -> None:
    """Every fold a panel over the stage (``deck-fold``) and a step; in an
    exercise only its answer, why and hint (``ex-key``) are steps: shown
    when the class has answered, within a clicker's reach."""
    for fold in _tags(soup, "details"):
        inside = fold.find_parent(class_="exercise") is not None
        step = not inside or "ex-key" in _classes(fold)
        _add_class(fold, "deck-fold", *(["fragment"] if step else []))
        fold.attrs.pop("open", None)


def _walk_through(soup: BeautifulSoup) -> None:
    """``steps`` wrappers: each list item a step, each statement of a code
    block a highlight step; the wrapper goes. No CSS selectors: soupsieve's
    first ``select`` costs 0.15-0.3 s of every build."""
    for wrapper in _tags(soup, "div", STEPS):
        for item in _tags(wrapper, "li"):
            if item.parent.name in ("ul", "ol"):
                _add_class(item, "fragment")
        for code in _tags(wrapper, "code"):
            if code.parent.name == "pre" and code.find_parent(
                "div", class_="highlight"
            ):
                _code_steps(soup, code)
        wrapper.unwrap()


def _statements(body: list) -> Iterator[tuple[int, int]]:
    """1-based line spans of ``body``'s steps: a compound statement's
    header, then each statement inside; no imports or docstrings."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        inner = [
            getattr(stmt, f)
            for f in ("body", "orelse", "finalbody", "handlers")
            if getattr(stmt, f, None)
        ]
        if inner:
            decorators = getattr(stmt, "decorator_list", [])
            start = min([stmt.lineno] + [d.lineno for d in decorators])
            yield start, min(b[0].lineno for b in inner) - 1
            for block in inner:
                yield from _statements(block)
        elif not (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            yield stmt.lineno, stmt.end_lineno


def _code_steps(soup: BeautifulSoup, code: Tag) -> None:
    """Wrap each statement's lines of ``code`` (lines start at pymdownx's
    anchors) in a ``span.code-step`` step."""
    lines: list[list] = []  # the nodes of each line, in order
    for node in list(code.contents):
        if _is_line_anchor(node):
            lines.append([])
        if lines:  # nodes before the first anchor stay
            lines[-1].append(node.extract())
    if not lines:
        return
    text = "".join(
        n.get_text() if isinstance(n, Tag) else str(n)
        for line in lines
        for n in line
    )
    try:
        spans = sorted(_statements(ast.parse(textwrap.dedent(text)).body))
    except SyntaxError:
        spans = []
    done = 0  # the lines put back
    for start, end in spans:
        code.extend(chain(*lines[done : start - 1]))
        step = soup.new_tag("span", attrs={"class": ["fragment", "code-step"]})
        step.extend(chain(*lines[start - 1 : end]))
        code.append(step)
        done = end
    code.extend(chain(*lines[done:]))


def _mark_steps(soup: BeautifulSoup) -> None:
    """Top-level Output blocks and tables right after code, and a trap's
    "The fix" box: each a step, with the prose after it."""
    after_code = False
    for el in soup.find_all(recursive=False):
        classes = _classes(el)
        if el.name == "div" and "highlight" in classes:
            name = el.find("span", class_="filename")
            name = name.get_text(strip=True) if name else ""
            step, after_code = name == "Output", bool(name)
        elif el.name == "table":
            step = after_code
        else:
            title = el.find("p", class_="admonition-title")
            step = {"admonition", "success"} <= set(classes) and (
                el.name == "div"
                and title is not None
                and title.get_text(strip=True).lower() == "the fix"
            )
            after_code = False
        if step:
            _add_class(el, "fragment")
            _prose_after(soup, el)


def _is_prose(el: Tag) -> bool:
    return el.name in ("p", "ul", "ol", "blockquote") or (
        "arithmatex" in _classes(el)
    )


def _prose_after(soup: BeautifulSoup, step: Tag) -> None:
    """The run of prose after a step is one step of its own: its
    conclusion stood on stage over the blank the Output would fill."""
    if run := list(takewhile(_is_prose, step.find_next_siblings())):
        box = run[0].wrap(soup.new_tag("div"))
        box["class"] = ["deck-prose", "fragment"]
        box.extend(el.extract() for el in run[1:])


def _no_opening_gap(screen: list) -> None:
    """A screen never opens on a blank gap: a step that would be its first
    block after the heading is shown from the start, with its prose."""
    blocks = [n for n in screen if isinstance(n, Tag)]
    while blocks and blocks[0].name in ("h1", "h2", "h3", "h4"):
        blocks.pop(0)
    classes = _classes(blocks[0]) if blocks else []
    if "fragment" not in classes or "deck-fold" in classes:
        return
    shown = blocks[:1]
    if len(blocks) > 1 and "deck-prose" in _classes(blocks[1]):
        shown.append(blocks[1])
    for el in shown:
        el["class"] = [c for c in el["class"] if c != "fragment"]


def _steps(screen: list) -> list[Tag]:
    """The screen's steps (``fragment``), in document order."""
    return [
        el
        for node in screen
        if isinstance(node, Tag)
        for el in [node, *_tags(node)]
        if "fragment" in _classes(el)
    ]


#: Folds that work an answer out: steps after it.
_AFTER_KEYS = {"verify", "reference"}


def _keys_last(screen: list) -> None:
    """An exercise's answer and why come after a screen's other steps (a
    hint after the answer is no hint), and only folds that work the answer
    out after them: ``data-fragment-index`` on every step."""
    steps = _steps(screen)
    keys = [
        el
        for el in steps
        if "ex-key" in el["class"] and "ex-key--hint" not in el["class"]
    ]
    if not keys:
        return  # nothing to come after
    after = [el for el in steps if _AFTER_KEYS & set(el["class"])]
    late = {id(el) for el in keys + after}
    ordered = [el for el in steps if id(el) not in late] + keys + after
    if all(a is b for a, b in zip(ordered, steps, strict=True)):
        return  # already in order (by identity: bs4 compares by content)
    for index, el in enumerate(ordered):
        el["data-fragment-index"] = str(index)


def _cut_screens(soup: BeautifulSoup) -> list[list]:
    """Top-level nodes, cut at each author-marked screen break."""
    screens: list[list] = [[]]
    for node in list(soup.children):
        if isinstance(node, Tag) and SCREEN_BREAK in _classes(node):
            screens.append([])
        else:
            screens[-1].append(node)
    return [s for s in screens if any(isinstance(n, Tag) for n in s)] or [[]]


def _unsection_exercises(soup: BeautifulSoup) -> None:
    """Exercise widgets become ``<div role="region">`` (reveal.js takes
    every ``section`` for a slide), with the deck's storage keys and
    words (``data-deck-text``); short items to sort go in two columns."""
    for ex in _tags(soup):
        if "data-deck-text" in ex.attrs:
            ex.string = ex.attrs.pop("data-deck-text")
        if ex.name == "section" and "exercise" in _classes(ex):
            ex.name = "div"
            ex["role"] = "region"
        if "data-ex-key" in ex.attrs:
            ex["data-ex-key"] = DECK_KEY + ex["data-ex-key"]
    for pool in _tags(soup, cls="ex-items"):
        if pool.find_parent(class_="ex-zone--pool") is None:
            continue
        items = _tags(pool, cls="ex-item__text")
        texts = [t.get_text(" ", strip=True) for t in items]
        if texts and max(map(len, texts)) <= SHORT_ITEM:
            _add_class(pool, "deck-two-columns")


def _unique_ids(soup: BeautifulSoup, prefix: str) -> None:
    """Prefix every id of the slide and every reference to one (one walk:
    a ``find_all`` per attribute was a sixth of the deck's layout)."""
    elements = _tags(soup)
    ids = {el["id"] for el in elements if "id" in el.attrs}
    for el in elements:
        attrs = el.attrs
        if "id" in attrs:
            attrs["id"] = prefix + attrs["id"]
        for attr in ID_REFS:
            if attr in attrs:
                value = attrs[attr]
                words = value if isinstance(value, list) else value.split()
                attrs[attr] = " ".join(
                    prefix + w if w in ids else w for w in words
                )
        href = attrs.get("href") if el.name == "a" else None
        if href and href.startswith("#") and href[1:] in ids:
            attrs["href"] = "#" + prefix + href[1:]


def _rebase_links(soup: Tag, page_url: str) -> None:
    """The page's relative URLs made relative to the deck (the site root)."""
    base = posixpath.dirname(page_url)
    for el in _tags(soup):
        attr = URL_ATTRS.get(el.name)
        url = el.get(attr)  # no such attribute: None
        if url and not re.match(r"([a-z][a-z0-9+.-]*:|/|#|\?)", url, re.I):
            path, sep, rest = url.partition("#")
            el[attr] = posixpath.normpath(posixpath.join(base, path)) + (
                sep + rest
            )
