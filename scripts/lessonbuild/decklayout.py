"""One rendered slide -> the screens the deck shows, decided at build time.

The slide's Markdown marks what is on stage (the contract with deck.py):
``<div class="reading" markdown>`` wraps what only the reading page shows;
``<div class="screen-break"></div>`` starts a new screen; every fold
(``???`` details) becomes a later step, a panel laid over the stage
(present.css), so it never pushes the screen's content off the bottom;
``<div class="steps" markdown>`` is talked through piece by piece: a
list's items one by one, a code block's statements highlighted one each.

Nothing is measured or split in the browser: tests/browser/test_present.py
visits every screen and step at 1280x720 and names the slide that does not
fit; the fix is a ``reading`` marker or a break, never a smaller font. The
deck is one page holding every slide, so each slide's ids get the slide's
prefix, and its exercises keep their answers apart from the reading
pages' (``data-ex-key`` gets the ``deck/`` prefix; in the deck they
live in the tab's sessionStorage, and "Reset all answers" clears them).
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
import textwrap
from dataclasses import dataclass

from bs4 import BeautifulSoup, NavigableString, Tag

from .deck import AFTER_ANSWER, READING, SCREEN_BREAK, STEPS

#: What the deck drops: the author's reading blocks, and the plugin's
#: "download the lesson as a notebook" link under every reading page.
READING_ONLY = (READING, "notebook-download")
#: Prefix of the deck's exercise storage keys (present.js resets them).
DECK_KEY = "deck/"
#: Attributes that hold one id, or several separated by spaces.
ID_REFS = (
    "for aria-labelledby aria-describedby aria-controls aria-owns "
    "aria-activedescendant list headers"
).split()
#: Attributes holding a URL that the browser resolves against the page.
URL_ATTRS = {"a": "href", "img": "src", "source": "src", "object": "data"}
#: Longest item (characters) of a sorting exercise laid out in two columns.
SHORT_ITEM = 48


@dataclass(frozen=True)
class Layout:
    """What one slide gives the deck."""

    screens: tuple[str, ...]  # each screen's body HTML, in order
    notes: str  # the instructor notes' HTML ("" when none)
    steps: int  # fragments over all screens


@functools.lru_cache(maxsize=256)
def lay_out(html: str, *, number: int, page_url: str) -> Layout:
    """The screens of one slide from its rendered reading-page content.
    Cached: under ``make serve`` every rebuild writes the whole deck, and
    laying out the 54 slides an edit did not touch again is most of a
    slide edit's time (the bench's serve rows)."""
    soup = BeautifulSoup(html, "html.parser")
    for link in _tags(soup, "a", "headerlink"):
        link.decompose()
    walked = _walk_through(soup)  # before the line anchors go: it reads them
    # Code lines' anchors (pymdownx "anchor_linenums") let a reading page
    # cite a line; a screen is shown whole, and nothing cites its lines.
    for link in _tags(soup, "a"):
        if link.get("id", "").startswith("__codelineno-"):
            link.decompose()
    # The stage is a 1280x720 screen however small the window showing it:
    # a figure's layout for a phone's column (its <source>) never fits it.
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
    reading = set(READING_ONLY)
    for block in [b for b in _tags(soup) if reading & set(b.get("class", ()))]:
        block.decompose()
    for block in _tags(soup, None, AFTER_ANSWER):
        block.unwrap()  # the presenter shows it when the class has answered
    steps = walked + _folds_to_steps(soup) + _mark_steps(soup)
    _unsection_exercises(soup)
    _unique_ids(soup, f"s{number}-")
    _rebase_links(soup, page_url)
    screens = _cut_screens(soup)
    for screen in screens:
        steps -= _no_opening_gap(screen)
        _keys_last(screen)
    return Layout(
        screens=tuple(
            "".join(
                str(n)
                for n in screen
                if not isinstance(n, NavigableString) or n.strip()
            )
            for screen in screens
        ),
        notes="".join(notes),
        steps=steps,
    )


def _tags(root: Tag, name: str | None = None, cls: str | None = None):
    """The tags under ``root`` in document order, of ``name`` and with
    class ``cls`` when given. A list, so the caller may remove tags as it
    goes; a plain walk, as bs4's ``find_all`` filters took a third of the
    deck's layout (each call walks the whole slide either way)."""
    return [
        n
        for n in root.descendants
        if isinstance(n, Tag)
        and (name is None or n.name == name)
        and (cls is None or cls in (n.get("class") or ()))
    ]


# --- steps --------------------------------------------------------------


def _add_class(el: Tag, *names: str) -> None:
    el["class"] = [*el.get("class", []), *names]


def _folds_to_steps(soup: BeautifulSoup) -> int:
    """Every fold is a panel laid over the stage when open
    (``details.deck-fold``), and a step (present.js opens it when shown).
    An exercise's answer and "why" are steps too (issue 27: answers in
    the deck are steps): the presenter shows them after the class has
    answered aloud, and present.js unlocks the key its widget keeps shut
    until an attempt. An exercise's hint is a step before them: a fold
    only a mouse opened was out of a clicker's reach (a rehearsal with
    → alone never showed the discussion slides' hints)."""
    steps = 0
    for fold in _tags(soup, "details"):
        classes = fold.get("class") or []
        inside = fold.find_parent(class_="exercise") is not None
        step = not inside or "ex-key" in classes
        _add_class(fold, "deck-fold", *(["fragment"] if step else []))
        fold.attrs.pop("open", None)
        steps += step
    return steps


def _walk_through(soup: BeautifulSoup) -> int:
    """The ``steps`` wrappers: each list item a step; each statement of a
    code block a highlight step. The wrapper itself goes (its content is
    the screen's, so an Output after its code is still a step). Plain
    walks, not CSS selectors: soupsieve's first ``select`` in a process
    compiles its parser, 0.15-0.3 s of every build."""
    steps = 0
    for wrapper in _tags(soup, "div", STEPS):
        for item in _tags(wrapper, "li"):
            if item.parent.name in ("ul", "ol"):
                _add_class(item, "fragment")
                steps += 1
        for code in _tags(wrapper, "code"):
            if code.parent.name == "pre" and code.find_parent(
                "div", class_="highlight"
            ):
                steps += _code_steps(soup, code)
        wrapper.unwrap()
    return steps


def _statements(body: list, spans: list[tuple[int, int]]) -> None:
    """The 1-based line spans of ``body``'s steps: a compound statement's
    header, then each statement of its body; no imports or docstrings."""
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
            spans.append((start, min(b[0].lineno for b in inner) - 1))
            for block in inner:
                _statements(block, spans)
        elif not (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            spans.append((stmt.lineno, stmt.end_lineno))


def _code_steps(soup: BeautifulSoup, code: Tag) -> int:
    """Wrap each statement's lines of ``code`` in a ``span.code-step``
    step. Lines start at pymdownx's line anchors; comments and blank
    lines are no steps."""
    lines: list[list] = []  # the nodes of each line, in order
    for node in list(code.contents):
        if (
            isinstance(node, Tag)
            and node.name == "a"
            and node.get("id", "").startswith("__codelineno-")
        ):
            lines.append([])
        if lines:  # nodes before the first anchor (none in pymdownx) stay
            lines[-1].append(node.extract())
    if not lines:
        return 0
    text = "".join(
        n.get_text() if isinstance(n, Tag) else str(n)
        for line in lines
        for n in line
    )
    spans: list[tuple[int, int]] = []
    try:
        _statements(ast.parse(textwrap.dedent(text)).body, spans)
    except SyntaxError:
        pass
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


def _mark_steps(soup: BeautifulSoup) -> int:
    """Output blocks and generated tables right after their code (or its
    Output), and a trap's fix ("The fix" success box): each a step. Only
    top-level blocks: one inside a fold or an exercise would be a dead
    step, and a table after prose is the slide's own content."""
    marked, after_code = 0, False
    for el in soup.find_all(recursive=False):
        classes = el.get("class") or []
        if el.name == "div" and "highlight" in classes:
            name = el.find("span", class_="filename")
            name = name.get_text(strip=True) if name else ""
            step, after_code = name == "Output", bool(name)
        elif el.name == "table":
            step = after_code
        else:
            title = el.find("p", class_="admonition-title")
            step = (
                el.name == "div"
                and "admonition" in classes
                and "success" in classes
                and bool(title)
                and title.get_text(strip=True).lower() == "the fix"
            )
            after_code = False
        if step:
            _add_class(el, "fragment")
            marked += _prose_after(soup, el)
            marked += 1
    return marked


#: Blocks of prose: what a stepped Output, table or fix is talked through in.
_PROSE = {"p", "ul", "ol", "blockquote"}


def _prose_after(soup: BeautifulSoup, step: Tag) -> int:
    """The prose right after a step comes with a step of its own (one
    for the run of paragraphs): it says what the Output shows, and on
    slides 31 and 47 its conclusion ("allclose False: the trap is
    silent") stood on stage over the blank the Output would fill."""
    run = []
    for el in step.find_next_siblings():
        prose = el.name in _PROSE or "arithmatex" in (el.get("class") or ())
        if not prose:
            break
        run.append(el)
    if not run:
        return 0
    box = run[0].wrap(soup.new_tag("div"))
    box["class"] = ["deck-prose", "fragment"]
    for el in run[1:]:
        box.append(el.extract())
    return 1


def _no_opening_gap(screen: list) -> int:
    """A screen never opens on a blank gap: a step that would be its first
    block (after its heading: slide 47's third screen opened on a bare
    title) is shown from the start, and the prose that talks it through
    with it (:func:`_prose_after`). Returns how many steps that removed."""
    blocks = [n for n in screen if isinstance(n, Tag)]
    while blocks and blocks[0].name in ("h1", "h2", "h3", "h4"):
        blocks.pop(0)
    first = blocks[0] if blocks else None
    classes = (first.get("class") or []) if first is not None else []
    if "fragment" not in classes or "deck-fold" in classes:
        return 0
    shown = [first]
    if len(blocks) > 1 and "deck-prose" in (blocks[1].get("class") or ()):
        shown.append(blocks[1])
    for el in shown:
        el["class"] = [c for c in el["class"] if c != "fragment"]
    return len(shown)


#: Folds that show an answer's working (``??? verify``, ``??? reference``):
#: steps after the answer they verify.
_AFTER_KEYS = {"verify", "reference"}


def _is_key(el: Tag) -> bool:
    """An exercise's answer or why (its hint comes before them)."""
    classes = el.get("class") or ()
    return "ex-key" in classes and "ex-key--hint" not in classes


def _keys_last(screen: list) -> None:
    """An exercise's answer and "why" come after a screen's other steps:
    a hint or a worked step after the exercise comes first (a hint shown
    after the answer is no hint), and only a fold that works the answer
    out comes after it (slide 47's "code that computed every variant's
    answer", shown first, covered the question the class was still
    working on). reveal.js orders steps by ``data-fragment-index`` where
    every step has one."""
    steps = [
        el
        for node in screen
        if isinstance(node, Tag)
        for el in [node, *_tags(node)]
        if "fragment" in (el.get("class") or ())
    ]
    keys = [el for el in steps if _is_key(el)]
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
        if isinstance(node, Tag) and SCREEN_BREAK in (node.get("class") or []):
            screens.append([])
        else:
            screens[-1].append(node)
    return [s for s in screens if any(isinstance(n, Tag) for n in s)] or [[]]


# --- one page among 55 ----------------------------------------------------


def _unsection_exercises(soup: BeautifulSoup) -> None:
    """Exercise widgets become ``<div role="region">`` (reveal.js takes
    every ``section`` under ``.slides`` for a slide), keep their answers
    under the deck's own storage keys (the tab's: a text with a
    ``data-deck-text`` says the deck's words, a notes field's "kept in
    this tab" for the page's "kept in this browser"), and items to sort
    that are all short go in two columns (present.css; long ones would
    wrap)."""
    for ex in _tags(soup):
        if "data-deck-text" in ex.attrs:
            ex.string = ex.attrs.pop("data-deck-text")
        if ex.name == "section" and "exercise" in (ex.get("class") or ()):
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
    """Prefix every id of the slide, and every reference to one. (One
    walk over the elements: a ``find_all`` per attribute was a sixth of
    the deck's layout.)"""
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
    """The page's relative URLs made relative to the deck (the site root):
    ``slides/NN-x.html``'s ``../figures/a.svg`` is ``figures/a.svg``."""
    base = posixpath.dirname(page_url)
    for el in _tags(soup):
        attr = URL_ATTRS.get(el.name)
        if attr in el.attrs:
            url = el[attr]
            if not url or re.match(r"^([a-z][a-z0-9+.-]*:|/|#|\?)", url, re.I):
                continue
            path, sep, rest = url.partition("#")
            el[attr] = posixpath.normpath(posixpath.join(base, path)) + (
                sep + rest
            )
