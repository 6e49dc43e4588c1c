"""The reveal.js deck (``site/present.html``) built from the rendered pages.

Presenters get reveal.js (speaker view, pacing timer, fragments,
overview, print to PDF) on the very HTML students read: each slide's
section is the page content the lesson plugin rendered (verified code,
Output blocks, generated tables, typeset math, exercise widgets), never a
second copy of the text. This module only rearranges that HTML:

- the ``??? instructor`` notes move to ``<aside class="notes">`` (speaker
  view only) and their "Time: N min" becomes ``data-timing`` (seconds);
- what the notes ask to hold back becomes a fragment (``FRAGMENT_RULES``):
  Output blocks and generated tables after their code, a trap's fix, a
  prediction's answer, a check's explanation;
- a slide with ``##`` sections becomes a vertical stack, one sub-slide
  per section, so dense slides split by a rule, not by hand. What still
  does not fit 1280x720 is split further in the browser by present.js,
  which measures the real fonts (a size estimate here would guess them).

Every URL in the deck is relative, so it works from ``file://`` too.
"""

from __future__ import annotations

import html as htmlmod
import json
import os
import posixpath
import re
import selectors
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag

# Debian's Chromium with the flags this machine needs: one definition,
# shared with the page-weight measurement.
from .pageweight import CHROMIUM, CHROMIUM_ARGS

#: Deck file, relative to the site folder.
DECK = "present.html"
#: Stage size the deck is designed and tested for.
WIDTH, HEIGHT = 1280, 720

#: Stylesheets and scripts of the deck, relative to the site folder.
CSS = (
    "assets/vendor/reveal/reveal.css",
    "assets/vendor/reveal/theme/white.css",
    "assets/vendor/katex/katex.min.css",
    "assets/exercises.css",
    "assets/present.css",
)
JS = (
    "assets/onpage.js",
    "assets/exercises.js",
    "assets/vendor/reveal/reveal.js",
    "assets/vendor/reveal/plugin/notes.js",
    "assets/present.js",
)


@dataclass(frozen=True)
class DeckSlide:
    """What one slide contributes to the deck."""

    number: int
    title: str
    kind: str
    url: str  # reading page, relative to the site folder
    html: str  # rendered page content
    minutes: float | None  # from the instructor notes' "Time: N min"


def exclude_notes_from_search(html: str) -> str:
    """Mark the instructor notes so Material's search skips them.

    Students search the lesson; the notes (what to ask, which
    misconception to watch for) are for the instructor only.
    """
    return html.replace(
        '<details class="instructor">',
        '<details class="instructor" data-search-exclude>',
    )


# --- fragments ----------------------------------------------------------


def _filename(block: Tag) -> str:
    name = block.find("span", class_="filename")
    return name.get_text(strip=True) if name else ""


def _is_code(el: Tag) -> bool:
    return "highlight" in (el.get("class") or []) and _filename(el) not in (
        "Output",
        "",
    )


def _is_output(el: Tag) -> bool:
    return "highlight" in (el.get("class") or []) and _filename(el) == (
        "Output"
    )


def _outputs(soup: BeautifulSoup) -> list[Tag]:
    """Every Output block: the result a presenter reveals after the code."""
    return [
        d for d in soup.find_all("div", class_="highlight") if _is_output(d)
    ]


def _tables_after_code(soup: BeautifulSoup) -> list[Tag]:
    """Tables that follow a code block: the ones a snippet generated."""
    out, seen_code = [], False
    for el in soup.find_all(["div", "table"]):
        if el.name == "div" and _is_code(el):
            seen_code = True
        elif el.name == "table" and seen_code:
            if el.find_parent("section", class_="exercise") is None:
                out.append(el)
    return out


def _fixes(soup: BeautifulSoup) -> list[Tag]:
    """A trap's fix, shown once the class has looked for the bug."""
    out = []
    for box in soup.find_all("div", class_="admonition"):
        title = box.find("p", class_="admonition-title")
        if (
            "success" in box["class"]
            and title
            and (title.get_text(strip=True).lower() == "the fix")
        ):
            out.append(box)
    return out


def _exercise_answers(soup: BeautifulSoup) -> list[Tag]:
    """A prediction's answer and a check's explanation."""
    out = []
    for ex in soup.find_all("section", class_="ex-predict"):
        out += ex.find_all("details", class_="ex-key--answer")
    for ex in soup.find_all("section", class_="ex-check"):
        out += [
            d
            for d in ex.find_all("details", class_="ex-key")
            if "ex-key--hint" not in d["class"]
        ]
    return out


#: Each rule finds the elements of a slide to show one step at a time.
FRAGMENT_RULES = (_outputs, _tables_after_code, _fixes, _exercise_answers)


def mark_fragments(soup: BeautifulSoup) -> int:
    """Add ``class="fragment"`` by ``FRAGMENT_RULES``; returns how many."""
    marked = []
    for rule in FRAGMENT_RULES:
        for el in rule(soup):
            if el not in marked:
                marked.append(el)
    for el in marked:
        el["class"] = [*el.get("class", []), "fragment"]
    return len(marked)


# --- one slide -> sections ----------------------------------------------


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


def _chunks(soup: BeautifulSoup) -> list[list]:
    """Top-level nodes cut before each ``h2`` (one sub-slide each)."""
    chunks: list[list] = [[]]
    for node in list(soup.children):
        if isinstance(node, Tag) and node.name == "h2" and chunks[-1]:
            if any(isinstance(n, Tag) for n in chunks[-1]):
                chunks.append([])
        chunks[-1].append(node)
    return chunks


#: Attributes holding a URL that the browser resolves against the page.
URL_ATTRS = {"a": "href", "img": "src", "source": "src", "object": "data"}


def _rebase_links(soup: BeautifulSoup, page_url: str) -> None:
    """Make the page's relative URLs relative to the deck (site root).

    A reading page lives at ``slides/NN-x.html``; its ``../figures/a.svg``
    must become ``figures/a.svg`` in ``present.html``. Images load eagerly:
    present.js measures each slide once they are in.
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
        if tag == "img":
            for img in soup.find_all("img", loading=True):
                del img["loading"]


def _unsection_exercises(soup: BeautifulSoup) -> None:
    """Exercise widgets become ``<div role="region">`` in the deck.

    reveal.js takes every ``section`` under ``.slides`` for a slide (it
    makes the others ``inert``, and the print view gives each a page), so
    an exercise's ``<section>`` would be a dead slide of its own.
    """
    for ex in soup.find_all("section", class_="exercise"):
        ex.name = "div"
        ex["role"] = "region"


#: (slide, total) -> its sections, kept per process (by the slide's whole
#: content): under ``mkdocs serve`` a rebuild reparses only the slides an
#: edit changed. At most ``KEEP`` (the oldest go first).
_kept: dict[tuple[DeckSlide, int], str] = {}
KEEP = 512


def slide_sections(slide: DeckSlide, total: int) -> str:
    """The ``<section>`` stack of one slide (kept, see ``_kept``)."""
    key = (slide, total)
    if key not in _kept:
        _keep(key, _parse_sections(slide, total))
    return _kept[key]


def _keep(key: tuple[DeckSlide, int], sections: str) -> None:
    while len(_kept) >= KEEP:
        del _kept[next(iter(_kept))]
    _kept[key] = sections


#: Slides to parse before a second process is worth its fork.
FORK_FROM = 8
#: Seconds the forked half may take before this process parses it too.
FORK_LIMIT = 60.0


def all_sections(slides: list[DeckSlide], total: int) -> list[str]:
    """Each slide's ``<section>`` stack, in order.

    Parsing the slides (BeautifulSoup) is nearly all the deck costs:
    1.8 s for 55 slides, at the very end of a build, when the other core
    has nothing left to do. So the slides no earlier build kept are
    split in two: a forked child parses one half while this process
    parses the other. A child that fails or is too slow costs only
    time: this process then parses its half too.
    """
    todo = [s for s in dict.fromkeys(slides) if (s, total) not in _kept]
    if len(todo) >= FORK_FROM and hasattr(os, "fork"):
        ours, theirs = _halves(todo)
        child = _fork(lambda: [_parse_sections(s, total) for s in theirs])
        for slide in ours:
            slide_sections(slide, total)
        done = _result(*child)
        if isinstance(done, list) and len(done) == len(theirs):
            for slide, sections in zip(theirs, done, strict=True):
                _keep((slide, total), sections)
    return [slide_sections(s, total) for s in slides]


def _halves(slides: list[DeckSlide]) -> tuple[list, list]:
    """Two lists of slides with about as much HTML to parse each."""
    halves: tuple[list, list] = ([], [])
    sizes = [0, 0]
    for slide in sorted(slides, key=lambda s: -len(s.html)):
        lighter = sizes.index(min(sizes))
        halves[lighter].append(slide)
        sizes[lighter] += len(slide.html)
    return halves


def _fork(work) -> tuple[int, int]:
    """(pid, read end): a child that writes ``work()`` as JSON and exits."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into MkDocs
        code = 1
        try:
            os.close(read)
            with os.fdopen(write, "wb") as out:
                out.write(json.dumps(work()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def _result(pid: int, read: int):
    """What the child wrote, or None (it failed, or took ``FORK_LIMIT``:
    then it is killed). Always reaped."""
    chunks, deadline = [], time.monotonic() + FORK_LIMIT
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(read, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    os.kill(pid, signal.SIGKILL)
                    break
                if not sel.select(left):
                    continue
                chunk = os.read(read, 1 << 20)
                if not chunk:
                    break  # the child closed its end: all is in
                chunks.append(chunk)
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return None


def _parse_sections(slide: DeckSlide, total: int) -> str:
    soup = BeautifulSoup(slide.html, "html.parser")
    for link in soup.find_all("a", class_="headerlink"):
        link.decompose()
    notes = _take_notes(soup)
    mark_fragments(soup)
    _unsection_exercises(soup)
    _rebase_links(soup, slide.url)
    chunks = _chunks(soup)
    seconds = round(slide.minutes * 60) if slide.minutes else None
    meta = (
        f'<p class="deck-meta"><span>{htmlmod.escape(slide.kind)}</span>'
        f'<a class="deck-reading" href="{slide.url}" '
        f'title="Open the reading page (R)">Reading page</a>'
        f"<span>{slide.number} / {total}</span></p>"
    )
    title = htmlmod.escape(slide.title)
    subs = []
    for i, chunk in enumerate(chunks):
        body = "".join(
            str(n)
            for n in chunk
            if not isinstance(n, NavigableString) or n.strip()
        )
        attrs = ""
        if seconds:
            # The whole slide's time, shared by its sub-slides.
            share = seconds // len(chunks) + (
                1 if i < seconds % len(chunks) else 0
            )
            attrs += f' data-timing="{share}"'
        cont = (
            f'<p class="deck-cont" aria-hidden="true">{title}</p>' if i else ""
        )
        aside = f'<aside class="notes">{notes}</aside>' if notes else ""
        subs.append(
            f"<section{attrs}>{meta}{cont}"
            f'<div class="md-typeset deck-body">{body}</div>'
            f"{aside}</section>"
        )
    return (
        f'<section data-slide="{slide.number}" data-reading="{slide.url}"'
        f' data-title="{title}">' + "".join(subs) + "</section>"
    )


# --- the deck page ------------------------------------------------------


def _asset(href: str, minified: frozenset[str]) -> str:
    """``href``, or the ``.min`` name the minify plugin gives it.

    The minify plugin renames the files it minifies and rewrites the links
    of the pages it sees; the deck is not one of them, and whether its
    ``on_post_build`` runs before ours depends on the plugin order, so the
    renamed name comes from the minify plugin's settings, not from disk.
    """
    if href not in minified:
        return href
    stem, _, ext = href.rpartition(".")
    return f"{stem}.min.{ext}"


def minified_assets(config) -> frozenset[str]:
    """The files the ``minify`` plugin (mkdocs-minify-plugin, if
    configured) renames to .min."""
    plugin = config["plugins"].get("minify")
    if plugin is None:
        return frozenset()
    options = plugin.config
    names: set[str] = set()
    if options.get("minify_js"):
        names.update(options.get("js_files") or ())
    if options.get("minify_css"):
        names.update(options.get("css_files") or ())
    return frozenset(names)


def deck_html(
    slides: list[DeckSlide],
    site_name: str,
    minified: frozenset[str] = frozenset(),
    favicon: str | None = None,
) -> str:
    """The whole ``present.html``."""
    total = len(slides)
    sections = "\n".join(all_sections(slides, total))
    css = "".join(
        f'<link rel="stylesheet" href="{_asset(h, minified)}">' for h in CSS
    )
    js = "".join(f'<script src="{_asset(h, minified)}"></script>' for h in JS)
    if favicon:  # else the browser asks for /favicon.ico, a 404
        css = f'<link rel="icon" href="{htmlmod.escape(favicon)}">' + css
    config = {"width": WIDTH, "height": HEIGHT, "slides": total}
    name = htmlmod.escape(site_name)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, '
        'initial-scale=1">'
        f"<title>{name} — presentation</title>{css}</head>"
        f'<body><div class="reveal"><div class="slides">\n{sections}\n'
        "</div></div>"
        f'<script type="application/json" id="deck-config">'
        f"{json.dumps(config)}</script>{js}</body></html>\n"
    )


def write(
    site_dir: str | Path,
    deck,
    rendered: dict[str, str],
    config,
    typeset=lambda html: html,
):
    """Write ``present.html`` from the plugin's rendered page contents.

    ``deck`` is the lesson's ``Deck``; ``rendered`` maps each page's
    src_uri to its final content HTML (widgets filled); ``typeset``
    turns the deck's math from TeX into HTML, once the slides are
    rearranged (reparsing KaTeX's output would cost ten times more).
    Returns the path written.
    """
    slides = []
    for slide in deck.slides:
        src_uri = deck.docs_rel(slide)
        minutes = sum(n.minutes for n in slide.notes if n.minutes) or None
        slides.append(
            DeckSlide(
                number=slide.number,
                title=slide.title,
                kind=str(slide.kind or ""),
                url=src_uri[: -len(".md")] + ".html",
                html=rendered.get(src_uri, ""),
                minutes=minutes,
            )
        )
    site_dir = Path(site_dir)
    out = site_dir / DECK
    html = typeset(
        deck_html(
            slides,
            config["site_name"],
            minified_assets(config),
            config["theme"].get("favicon"),
        )
    )
    out.write_text(html, encoding="utf-8")
    return out


# --- handout -------------------------------------------------------------


def pdf(site_dir: str | Path, out: str | Path) -> int:
    """Print the deck's print view (``?print-pdf``) to ``out``.

    One page per sub-slide, every step shown (the deck sets
    ``pdfSeparateFragments: false``). Returns the deck's slide count, which
    the page count must equal.
    """
    from playwright.sync_api import sync_playwright

    url = (Path(site_dir).resolve() / DECK).as_uri() + "?print-pdf"
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        page.goto(url)
        page.wait_for_selector(
            "html[data-deck-ready]", state="attached", timeout=120_000
        )
        total = page.evaluate("Reveal.getTotalSlides()")
        page.pdf(
            path=str(out), prefer_css_page_size=True, print_background=True
        )
        browser.close()
    return total


if __name__ == "__main__":  # make pdf
    import sys

    site, target = sys.argv[1], sys.argv[2]
    count = pdf(site, target)
    print(f"{target}: {count} slides")
