"""One rendered slide -> the screens the deck shows, decided at build time.

A slide is a stage; its reading page is the stage plus depth. The slide's
Markdown says which is which (the cross-team contract):

- ``<div class="reading" markdown>`` ... ``</div>`` wraps reading-only
  content: the reading page shows it, the deck drops it;
- ``<div class="screen-break"></div>`` is an author-marked screen break:
  the deck starts a new screen there (the reading page shows nothing);
- every fold (``???`` details: hints, answers, "why", a figure's code, an
  exercise's model answer) becomes a later *step* of its screen: a panel
  laid over the stage when shown (present.css), so a fold never pushes
  the screen's content off the bottom, and never leaves a gap before it;
- ``<div class="steps" markdown>`` ... ``</div>`` wraps what the notes
  talk through piece by piece: a list's items step in one by one, and a
  code block's statements are highlighted one per step (all its lines
  stay on screen, as reveal's code-highlight steps do).

What is on stage is the author's choice, not a measurement: nothing is
split in the browser. ``tests/browser/test_present.py`` visits every
screen and step at 1280x720 and names the slide that does not fit; the
fix is a ``reading`` marker (or a break), never a smaller font.

Besides, the deck is one HTML page holding all 55 slides, so each slide's
ids get the slide's prefix (a reading page's ``ex1`` is on 33 pages), and
the exercises keep their answers apart from the reading pages' (classroom
mode: ``data-ex-key`` gets the ``deck/`` prefix, which present.js clears).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, NavigableString, Tag

#: Classes of the contract's markers in the slides' Markdown.
READING, SCREEN_BREAK, STEPS = "reading", "screen-break", "steps"
#: What the deck drops besides the author's reading blocks: the plugin's
#: "download the lesson as a notebook" link under every reading page.
READING_ONLY = (READING, "notebook-download")
#: Prefix of the deck's exercise storage keys (present.js clears them).
DECK_KEY = "deck/"
#: Attributes that hold one id, or several separated by spaces.
ID_REFS = (
    "for",
    "aria-labelledby",
    "aria-describedby",
    "aria-controls",
    "aria-owns",
    "aria-activedescendant",
    "list",
    "headers",
)
#: Attributes holding a URL that the browser resolves against the page.
URL_ATTRS = {"a": "href", "img": "src", "source": "src", "object": "data"}


@dataclass(frozen=True)
class Layout:
    """What one slide gives the deck."""

    screens: tuple[str, ...]  # each screen's body HTML, in order
    notes: str  # the instructor notes' HTML ("" when none)
    steps: int  # fragments over all screens


def lay_out(html: str, *, number: int, page_url: str) -> Layout:
    """The screens of one slide from its rendered reading-page content."""
    soup = BeautifulSoup(html, "html.parser")
    for link in soup.find_all("a", class_="headerlink"):
        link.decompose()
    walked = _walk_through(soup)  # before the line anchors go: it reads them
    # Code lines' anchors (pymdownx "anchor_linenums"): empty links a
    # reading page offers for citing a line; on stage, links without a
    # name (axe) that Tab would stop at 20 times in one block.
    for link in soup.find_all("a", href=re.compile(r"^#__codelineno-")):
        link.decompose()
    notes = _take_notes(soup)
    for block in soup.find_all(class_=READING_ONLY):
        block.decompose()
    folds = _folds_to_steps(soup)
    steps = walked + folds + _mark_steps(soup)
    _unsection_exercises(soup)
    _two_columns(soup)
    _unique_ids(soup, f"s{number}-")
    _rebase_links(soup, page_url)
    screens = _cut_screens(soup)
    for screen in screens:
        steps -= _no_opening_gap(screen)
    return Layout(
        screens=tuple(
            "".join(
                str(n)
                for n in screen
                if not isinstance(n, NavigableString) or n.strip()
            )
            for screen in screens
        ),
        notes=notes,
        steps=steps,
    )


# --- notes --------------------------------------------------------------


def _take_notes(soup: BeautifulSoup) -> str:
    """Remove the instructor notes from the slide; their inner HTML."""
    parts = []
    for box in soup.find_all("details", class_="instructor"):
        summary = box.find("summary")
        if summary:
            summary.decompose()
        parts.append(box.decode_contents())
        box.decompose()
    return "".join(parts)


# --- steps --------------------------------------------------------------


def _folds_to_steps(soup: BeautifulSoup) -> int:
    """Every fold is a panel laid over the stage when open
    (``details.deck-fold``, present.css), and a step (``.fragment``:
    present.js opens it when shown) unless it belongs to an exercise:
    every kind opens its own key, answer and "why" once it has had a
    real attempt (exercises.js), so as a step it would show nothing."""
    steps = 0
    for fold in soup.find_all("details"):
        step = fold.find_parent(class_="exercise") is None
        fold["class"] = [*fold.get("class", []), "deck-fold"] + (
            ["fragment"] if step else []
        )
        fold.attrs.pop("open", None)
        steps += step
    return steps


def _walk_through(soup: BeautifulSoup) -> int:
    """The ``steps`` wrappers: each list item a step; each statement of a
    code block a highlight step. The wrapper itself goes (its content is
    the screen's, so an Output after its code is still a step)."""
    steps = 0
    for wrapper in soup.find_all("div", class_=STEPS):
        for item in wrapper.select("ul > li, ol > li"):
            item["class"] = [*item.get("class", []), "fragment"]
            steps += 1
        for code in wrapper.select("div.highlight pre > code"):
            steps += _code_steps(soup, code)
        wrapper.unwrap()
    return steps


def _code_steps(soup: BeautifulSoup, code: Tag) -> int:
    """Wrap each statement's lines of ``code`` in a ``span.code-step``
    step. Lines start at pymdownx's line anchors (``anchor_linenums``);
    statements are Python's own (``ast``): a compound statement's header,
    then each statement of its body; imports, comments and blank lines
    are no steps."""
    import ast
    import textwrap

    lines: list[list] = []  # the nodes of each line, in order
    for node in list(code.contents):
        if (
            isinstance(node, Tag)
            and node.name == "a"
            and node.get("id", "").startswith("__codelineno-")
        ):
            lines.append([])
        if lines:
            lines[-1].append(node.extract())
        # nodes before the first anchor (none in pymdownx output) stay
    if not lines:
        return 0
    text = "".join(
        "".join(str(n.get_text() if isinstance(n, Tag) else n) for n in line)
        for line in lines
    )
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        tree = None
    spans: list[tuple[int, int]] = []  # 1-based first and last line

    def visit(body: list) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                continue
            inner = [
                getattr(stmt, f)
                for f in ("body", "orelse", "finalbody", "handlers")
                if getattr(stmt, f, None)
            ]
            if inner and not isinstance(stmt, ast.Expr):
                first = min(b[0].lineno for b in inner)
                start = min(
                    [stmt.lineno]
                    + [d.lineno for d in getattr(stmt, "decorator_list", [])]
                )
                spans.append((start, first - 1))
                for block in inner:
                    visit(block)
            elif not (
                isinstance(stmt, ast.Expr)
                and isinstance(getattr(stmt, "value", None), ast.Constant)
            ):
                spans.append((stmt.lineno, stmt.end_lineno or stmt.lineno))

    if tree is not None:
        visit(tree.body)
    spans.sort()
    line = 1
    for start, end in spans:
        for nodes in lines[line - 1 : start - 1]:
            code.extend(nodes)
        step = soup.new_tag("span", attrs={"class": "fragment code-step"})
        for nodes in lines[start - 1 : end]:
            step.extend(nodes)
        code.append(step)
        line = end + 1
    for nodes in lines[line - 1 :]:
        code.extend(nodes)
    return len(spans)


def _filename(block: Tag) -> str:
    name = block.find("span", class_="filename")
    return name.get_text(strip=True) if name else ""


def _is_highlight(el: Tag) -> bool:
    return el.name == "div" and "highlight" in (el.get("class") or [])


def _fix(el: Tag) -> bool:
    """A trap's fix ("The fix" success box): shown once the class looked."""
    if el.name != "div" or "admonition" not in (el.get("class") or []):
        return False
    title = el.find("p", class_="admonition-title")
    return (
        "success" in el["class"]
        and bool(title)
        and (title.get_text(strip=True).lower() == "the fix")
    )


def _mark_steps(soup: BeautifulSoup) -> int:
    """Output blocks and generated tables right after their code (or its
    Output), and a trap's fix: each a step. Only top-level blocks: one
    inside a fold or an exercise would be a dead step (nothing on screen
    changes), and a table after prose is the slide's own content."""
    marked, after_code = 0, False
    for el in soup.find_all(recursive=False):
        step = False
        if _is_highlight(el):
            step = _filename(el) == "Output"
            after_code = bool(_filename(el))
        elif el.name == "table":
            step = after_code
        else:
            step = _fix(el)
            after_code = False
        if step:
            el["class"] = [*el.get("class", []), "fragment"]
            marked += 1
    return marked


def _no_opening_gap(screen: list) -> int:
    """A screen never opens on a blank gap: a step that would be its first
    block is shown from the start. Returns how many steps that removed."""
    for node in screen:
        if isinstance(node, Tag):
            classes = node.get("class") or []
            if "fragment" in classes and "deck-fold" not in classes:
                node["class"] = [c for c in classes if c != "fragment"]
                return 1
            return 0
    return 0


# --- screens ------------------------------------------------------------


def _cut_screens(soup: BeautifulSoup) -> list[list]:
    """Top-level nodes, cut at each author-marked screen break."""
    screens: list[list] = [[]]
    for node in list(soup.children):
        if isinstance(node, Tag) and SCREEN_BREAK in (node.get("class") or []):
            screens.append([])
            continue
        screens[-1].append(node)
    return [s for s in screens if any(isinstance(n, Tag) for n in s)] or [[]]


# --- one page among 55 ----------------------------------------------------


def _unsection_exercises(soup: BeautifulSoup) -> None:
    """Exercise widgets become ``<div role="region">`` in the deck, and
    keep their answers under the deck's own storage keys.

    reveal.js takes every ``section`` under ``.slides`` for a slide, so an
    exercise's ``<section>`` would be a dead slide of its own.
    """
    for ex in soup.find_all("section", class_="exercise"):
        ex.name = "div"
        ex["role"] = "region"
    for ex in soup.find_all(attrs={"data-ex-key": True}):
        ex["data-ex-key"] = DECK_KEY + ex["data-ex-key"]


#: Longest item (characters) of a sorting exercise laid out in two columns.
SHORT_ITEM = 48


def _two_columns(soup: BeautifulSoup) -> None:
    """Items to sort that are all short go in two columns (present.css):
    long ones would wrap to many lines in half the width."""
    for pool in soup.select(".ex-zone--pool .ex-items"):
        texts = [
            t.get_text(" ", strip=True) for t in pool.select(".ex-item__text")
        ]
        if texts and max(map(len, texts)) <= SHORT_ITEM:
            pool["class"] = [*pool.get("class", []), "deck-two-columns"]


def _unique_ids(soup: BeautifulSoup, prefix: str) -> None:
    """Prefix every id of the slide, and every reference to one."""
    ids = {el["id"] for el in soup.find_all(id=True)}
    for el in soup.find_all(id=True):
        el["id"] = prefix + el["id"]
    for attr in ID_REFS:
        for el in soup.find_all(attrs={attr: True}):
            value = el[attr]
            words = value if isinstance(value, list) else value.split()
            el[attr] = " ".join(prefix + w if w in ids else w for w in words)
    for el in soup.find_all("a", href=re.compile("^#")):
        if el["href"][1:] in ids:
            el["href"] = "#" + prefix + el["href"][1:]


def _rebase_links(soup: BeautifulSoup, page_url: str) -> None:
    """Make the page's relative URLs relative to the deck (site root).

    A reading page lives at ``slides/NN-x.html``; its ``../figures/a.svg``
    must become ``figures/a.svg`` in ``present.html``.
    """
    base = posixpath.dirname(page_url)
    for tag, attr in URL_ATTRS.items():
        for el in soup.find_all(tag, attrs={attr: True}):
            url = el[attr]
            if not url or re.match(r"^([a-z][a-z0-9+.-]*:|/|#|\?)", url, re.I):
                continue
            path, sep, rest = url.partition("#")
            el[attr] = posixpath.normpath(posixpath.join(base, path)) + (
                sep + rest
            )
