"""The reveal.js deck (``site/present.html``) built from the rendered pages.

Each slide's screens are the very HTML students read, laid out at build
time by ``decklayout``; the instructor notes go to the speaker view, their
"Time: N min" to ``data-timing``. Every URL is relative (``file://``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import jinja2

from .decklayout import lay_out

DECK = "present.html"
WIDTH, HEIGHT = 1280, 720
#: Debian's Chromium, as ``make browser`` installs it.
CHROMIUM = "/usr/bin/chromium"
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
#: The handout: the print view, and with each screen's notes after it.
EDITIONS = {
    "slides": "?print-pdf",
    "notes": "?print-pdf&showNotes=separate-page",
}
#: The package's templates: the deck, and the failure page (build.py).
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("lessonbuild", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
TEMPLATES.filters["minutes"] = lambda value: f"{value:g}"


@dataclass(frozen=True)
class DeckSlide:
    number: int
    title: str
    kind: str
    url: str  # reading page, relative to the site folder
    html: str  # rendered page content
    minutes: float | None  # from the instructor notes' "Time: N min"


def slide_minutes(slide) -> float:
    """A deck model slide's time: the sum of its notes' "Time: N min"."""
    return sum(n.minutes for n in slide.notes if n.minutes)


def class_period(deck) -> str:
    """ "90 min + homework", as the home page says."""
    return f"{sum(map(slide_minutes, deck.slides)):g} min + homework"


def minified_assets(config) -> frozenset[str]:
    """The files the minify plugin renames to .min: from its settings, as
    its ``on_post_build`` may run after ours."""
    plugin = config["plugins"].get("minify")
    return frozenset(
        name
        for kind in ("js", "css")
        if plugin is not None and plugin.config.get(f"minify_{kind}")
        for name in plugin.config.get(f"{kind}_files") or ()
    )


def deck_html(
    slides: list[DeckSlide],
    site_name: str,
    minified: frozenset[str] = frozenset(),
    favicon: str | None = None,
    typeset=str,
) -> str:
    """The whole ``present.html``; ``typeset`` turns TeX into HTML (the
    notes on their own: as JSON, no formula is found)."""

    def asset(href: str) -> str:
        stem, _, ext = href.rpartition(".")
        return f"{stem}.min.{ext}" if href in minified else href

    views, start = [], 0.0
    for slide in slides:
        layout = lay_out(slide.html, number=slide.number, page_url=slide.url)
        # The slide's seconds over its screens, adding up exactly.
        seconds, parts = round((slide.minutes or 0) * 60), len(layout.screens)
        each, over = divmod(seconds, parts)
        timing = [each + (i < over) for i in range(parts)]
        views.append(
            asdict(slide)
            | {
                "screens": layout.screens,
                "notes": typeset(layout.notes),
                "timing": timing if seconds else None,
                "minutes": slide.minutes or 0,
                "start": start,
            }
        )
        start += slide.minutes or 0
    return typeset(
        TEMPLATES.get_template(DECK).render(
            site_name=site_name,
            favicon=favicon,
            css=[asset(h) for h in CSS],
            js=[asset(h) for h in JS],
            slides=views,
            total=len(slides),
            period=f"{start:g} min",
            config={
                "width": WIDTH,
                "height": HEIGHT,
                "slides": len(slides),
                "katex": asset(KATEX_CSS),
            },
        )
    )


def write(site_dir, deck, rendered: dict[str, str], config, typeset=str):
    """Write ``present.html`` from ``rendered`` (src_uri -> content HTML)
    and return its path. ``typeset`` runs on the rearranged deck: reparsing
    KaTeX's output would cost ten times more."""
    slides = [
        DeckSlide(
            number=slide.number,
            title=slide.title,
            kind=slide.kind,
            url=deck.docs_rel(slide).removesuffix(".md") + ".html",
            html=rendered.get(deck.docs_rel(slide), ""),
            minutes=slide_minutes(slide) or None,
        )
        for slide in deck.slides
    ]
    html = deck_html(
        slides,
        config["site_name"],
        minified_assets(config),
        config["theme"].get("favicon"),
        typeset,
    )
    out = Path(site_dir) / DECK
    out.write_text(html, encoding="utf-8")
    return out


def pdf(site_dir, out, *, chromium: str, edition: str = "slides") -> int:
    """Print the deck's print view to ``out`` (a page per screen and per
    fold, nothing shrunk); returns the number of pages' sections."""
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
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lessonbuild.present")
    parser.add_argument("site", help="the built site folder")
    parser.add_argument("out", help="the PDF to write")
    parser.add_argument(
        "--chromium",
        default=CHROMIUM,
        help="Chromium binary (default: %(default)s, make browser's)",
    )
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
