"""The reveal.js deck (``site/present.html``) built from the rendered pages.

Presenters get reveal.js (speaker view, pacing timer, fragments,
overview, print to PDF) on the very HTML students read: each slide's
screens are the page content the lesson plugin rendered (verified code,
Output blocks, generated tables, typeset math, exercise widgets), never a
second copy of the text. The layout is decided here, at build time, by
the markers in the slides (``decklayout``: what is reading-only, where a
screen breaks, which folds are steps); the browser only starts reveal.js.

- one ``<section>`` stack per slide, one child ``<section>`` per screen,
  and linear navigation (present.js): every key that goes forward visits
  every screen and every step, while ``#/15`` is still slide 15;
- the ``??? instructor`` notes go to ``<aside class="notes">`` (speaker
  view only) and their "Time: N min" becomes ``data-timing`` (seconds),
  with a pacing line computed from all the notes (``class_period``).

Every URL in the deck is relative, so it works from ``file://`` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import jinja2

from .decklayout import lay_out

#: Deck file, relative to the site folder.
DECK = "present.html"
#: Stage size the deck is designed and tested for.
WIDTH, HEIGHT = 1280, 720

#: Stylesheets and scripts of the deck, relative to the site folder.
KATEX_CSS = "assets/vendor/katex/katex.min.css"
CSS = (
    "assets/vendor/reveal/reveal.css",
    "assets/vendor/reveal/theme/white.css",
    KATEX_CSS,
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


# --- the class period ---------------------------------------------------


def slide_minutes(slide) -> float:
    """A deck model slide's time: the sum of its notes' "Time: N min"."""
    return sum(n.minutes for n in slide.notes if n.minutes)


def class_minutes(deck) -> float:
    """The class period the notes plan: every slide's time, added up."""
    return sum(slide_minutes(s) for s in deck.slides)


def _minutes(value: float) -> str:
    return f"{value:g}"


def class_period(deck) -> str:
    """ "90 min + homework": what the home page and the speaker view say."""
    return f"{_minutes(class_minutes(deck))} min + homework"


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


def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("lessonbuild", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["minutes"] = _minutes
    return env.get_template(DECK)


def _share(seconds: int, parts: int) -> list[int]:
    """``seconds`` split over ``parts`` screens, adding up exactly."""
    return [
        seconds // parts + (1 if i < seconds % parts else 0)
        for i in range(parts)
    ]


def deck_html(
    slides: list[DeckSlide],
    site_name: str,
    minified: frozenset[str] = frozenset(),
    favicon: str | None = None,
) -> str:
    """The whole ``present.html``."""
    total = len(slides)
    period = sum(s.minutes or 0 for s in slides)
    views, start = [], 0.0
    for slide in slides:
        layout = lay_out(slide.html, number=slide.number, page_url=slide.url)
        seconds = round((slide.minutes or 0) * 60)
        views.append(
            {
                "number": slide.number,
                "title": slide.title,
                "kind": slide.kind,
                "url": slide.url,
                "screens": layout.screens,
                "notes": layout.notes,
                "timing": _share(seconds, len(layout.screens))
                if seconds
                else None,
                "minutes": slide.minutes or 0,
                "start": start,
            }
        )
        start += slide.minutes or 0
    config = {
        "width": WIDTH,
        "height": HEIGHT,
        "slides": total,
        "katex": _asset(KATEX_CSS, minified),
    }
    return _template().render(
        site_name=site_name,
        favicon=favicon,
        css=[_asset(h, minified) for h in CSS],
        js=[_asset(h, minified) for h in JS],
        slides=views,
        total=total,
        period=f"{_minutes(period)} min",
        config=config,
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
        slides.append(
            DeckSlide(
                number=slide.number,
                title=slide.title,
                kind=str(slide.kind or ""),
                url=src_uri[: -len(".md")] + ".html",
                html=rendered.get(src_uri, ""),
                minutes=slide_minutes(slide) or None,
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

#: The handout's two editions: the deck's print view, and the same with
#: each screen's instructor notes on a page of their own after it.
EDITIONS = {
    "slides": "?print-pdf",
    "notes": "?print-pdf&showNotes=separate-page",
}


def pdf(
    site_dir: str | Path,
    out: str | Path,
    *,
    chromium: str,
    edition: str = "slides",
) -> int:
    """Print the deck's print view to ``out`` with headless ``chromium``.

    Every screen is a page at full size, every step shown; a fold (an
    answer, a hint, a figure's code) is a page of its own after its
    screen (present.js), so nothing is shrunk. The ``notes`` edition adds
    each screen's instructor notes on the page after it. Returns the
    number of sections printed (screens and folds).
    """
    from playwright.sync_api import sync_playwright

    url = (Path(site_dir).resolve() / DECK).as_uri() + EDITIONS[edition]
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
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


def main(argv: list[str] | None = None) -> None:
    """``make pdf`` / ``make pdf-notes``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lessonbuild.present")
    parser.add_argument("site", help="the built site folder")
    parser.add_argument("out", help="the PDF to write")
    parser.add_argument("--chromium", required=True, help="Chromium binary")
    parser.add_argument(
        "--edition", choices=sorted(EDITIONS), default="slides"
    )
    args = parser.parse_args(argv)
    count = pdf(
        args.site, args.out, chromium=args.chromium, edition=args.edition
    )
    print(f"{args.out}: {count} screens and folds ({args.edition})")


if __name__ == "__main__":
    main()
