"""Page weight of the built site, as a student's browser meets it.

Issue 15's budget: the bytes of a first visit to a slide (empty cache)
and of a click to the next one, in Debian's Chromium against a local
server that counts the bodies it sends (a cache hit costs nothing). Like
GitHub Pages, it sends no compression and ``max-age=600``; "gzip" is
each body gzipped at level 6, as static hosts do.

    python -m lessonbuild.pageweight SITE_DIR [FIRST_PAGE]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

from .present import CHROMIUM

CHROMIUM_ARGS = """--no-sandbox --disable-gpu --disable-background-networking
--disable-component-update --no-first-run""".split()
#: The lesson's heaviest kind of page: a worked trace with math, code,
#: outputs and tables.
FIRST_PAGE = "slides/15-trace-d-model-8-h-2-d-k-4-seq-4-batch-1.html"
NEXT_LINK = "a.md-footer__link--next"  # Material's navigation.footer


class Sent(NamedTuple):
    path: str
    raw: int
    gzip: int


@dataclass
class Visit:
    """What one step (a first visit, a click) downloaded."""

    url: str
    sent: list[Sent]

    @property
    def raw(self) -> int:
        return sum(s.raw for s in self.sent)

    @property
    def gzip(self) -> int:
        return sum(s.gzip for s in self.sent)


def launch(playwright):
    """Debian's Chromium, as the bench and the tests run it."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_ARGS
    )


class _Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def copyfile(self, source, outputfile):
        body = source.read()
        outputfile.write(body)
        path, size = unquote(urlsplit(self.path).path), len(body)
        self.server.sent.append(Sent(path, size, len(gzip.compress(body, 6))))

    def log_message(self, *args):
        pass


def _settle(sent: list[Sent], quiet=2.0, limit=20.0) -> list[Sent]:
    """What was sent, once nothing more was for ``quiet`` seconds: on a
    busy machine, scripts still fetch (the search index) after
    "networkidle", and those bytes count too."""
    start = last = time.monotonic()
    count = len(sent)
    while time.monotonic() - last < quiet:
        if time.monotonic() - start > limit:
            raise TimeoutError(f"still downloading after {limit} s")
        time.sleep(0.05)
        if len(sent) != count:
            count, last = len(sent), time.monotonic()
    taken = sent[:count]
    del sent[:count]
    return taken


def measure(
    site: Path, first_page: str = FIRST_PAGE, browser=None
) -> tuple[Visit, Visit]:
    """A first visit to ``first_page`` with an empty cache, then a click
    on its "Next" link: what the server sent for each. In ``browser``
    when given (a test's: a second Playwright cannot start in its
    thread), else in a Chromium of its own."""
    if not (Path(site) / first_page).is_file():
        raise FileNotFoundError(f"{site}/{first_page}: build the site first")
    handler = functools.partial(_Handler, directory=str(site))
    with ExitStack() as stack:
        # The site on a free local port (closed last, shut down first).
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        stack.enter_context(httpd)
        sent = httpd.sent = []  # each request's handler adds to it
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        stack.callback(httpd.shutdown)
        base = f"http://127.0.0.1:{httpd.server_address[1]}/"
        if browser is None:
            from playwright.sync_api import sync_playwright

            browser = launch(stack.enter_context(sync_playwright()))
            stack.callback(browser.close)
        # A page of its own context: an empty cache.
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        stack.callback(page.close)
        page.goto(base + first_page, wait_until="networkidle")
        first = Visit(page.url, _settle(sent))
        link = page.locator(NEXT_LINK)
        if not link.count():
            raise LookupError(f"{base + first_page} has no {NEXT_LINK} link")
        link.first.click()
        page.wait_for_load_state("networkidle")
        return first, Visit(page.url, _settle(sent))


def report(visits: tuple[Visit, Visit]) -> str:
    """The two visits, one line per response, then their totals."""
    lines = []
    for name, visit in zip(("first visit", "next"), visits, strict=True):
        lines.append(f"{name}: {visit.url}")
        for s in sorted(visit.sent, key=lambda s: -s.raw):
            lines.append(f"  {s.raw:>8} {s.gzip:>8}  {s.path}")
        lines.append(
            f"  {name}: {len(visit.sent)} responses, {visit.raw / 1000:.1f}"
            f" KB raw, {visit.gzip / 1000:.1f} KB gzip"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the built site folder")
    parser.add_argument("first_page", nargs="?", default=FIRST_PAGE)
    args = parser.parse_args(argv)
    print(report(measure(args.site, args.first_page)))


if __name__ == "__main__":
    main()
