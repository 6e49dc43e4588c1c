"""Page weight of the built site, as a student's browser meets it.

Issue 15's budget is about bytes a student downloads: a first visit to a
slide (empty cache) and a click to the next slide. We measure them in
Debian's Chromium, driven by Playwright, against a plain static server
started here on the built site. The server itself counts the body bytes
it sends, so a request the browser answers from its cache costs nothing,
exactly as on a real host. Like GitHub Pages, the server sends no
compression and ``Cache-Control: max-age=600``; "gzip" is what each body
would weigh gzipped (level 6, what static hosts typically use).

    python -m lessonbuild.pageweight SITE_DIR [FIRST_PAGE]

prints one line per response and the two totals, raw and gzip. The bench
calls :func:`measure`.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# Slide 15 is the lesson's heaviest kind of page: a worked trace with
# math, code, outputs and tables.
FIRST_PAGE = "slides/15-trace-d-model-8-h-2-d-k-4-seq-4-batch-1.html"
# Material's footer link to the next page (navigation.footer).
NEXT_LINK = "a.md-footer__link--next"


@dataclass
class Sent:
    """One response body the server sent."""

    path: str
    raw: int
    gzip: int


@dataclass
class Visit:
    """What one step (a first visit, a click) downloaded."""

    url: str
    sent: list[Sent] = field(default_factory=list)

    @property
    def raw(self) -> int:
        return sum(s.raw for s in self.sent)

    @property
    def gzip(self) -> int:
        return sum(s.gzip for s in self.sent)


@dataclass
class PageWeight:
    first: Visit
    next: Visit


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, cacheable for 10 minutes; records what it sends."""

    log: list[Sent]
    lock: threading.Lock

    def end_headers(self):
        self.send_header("Cache-Control", "max-age=600")
        super().end_headers()

    def copyfile(self, source, outputfile):
        body = source.read()
        outputfile.write(body)
        with self.lock:
            self.log.append(
                Sent(
                    unquote(urlsplit(self.path).path),
                    len(body),
                    len(gzip.compress(body, 6)),
                )
            )

    def log_message(self, format, *args):  # noqa: A002 - stdlib name
        pass


class _Server:
    """The site served on a free local port, in a thread."""

    def __init__(self, site: Path):
        self.log: list[Sent] = []
        handler = type(
            "Handler",
            (_CountingHandler,),
            {"log": self.log, "lock": threading.Lock()},
        )
        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0),
            functools.partial(handler, directory=str(site)),
        )
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, daemon=True
        )

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def settle(self, quiet: float = 2.0, limit: float = 20.0) -> None:
        """Wait until nothing was sent for ``quiet`` seconds: scripts ask
        for more (the search worker, its index) after "networkidle" on a
        busy machine, and those bytes belong to this step."""
        start = last_change = time.monotonic()
        count = len(self.log)
        while time.monotonic() - last_change < quiet:
            if time.monotonic() - start > limit:
                raise TimeoutError(f"still downloading after {limit} s")
            time.sleep(0.05)
            if len(self.log) != count:
                count, last_change = len(self.log), time.monotonic()

    def take(self) -> list[Sent]:
        """What was sent since the last call."""
        taken = list(self.log)
        del self.log[: len(taken)]
        return taken


def measure(
    site: Path,
    first_page: str = FIRST_PAGE,
    *,
    chromium: str = CHROMIUM,
) -> PageWeight:
    """First visit to ``first_page`` with an empty cache, then a click on
    its "Next" link; returns what the server sent for each step."""
    from playwright.sync_api import sync_playwright

    site = Path(site)
    if not (site / first_page).is_file():
        raise FileNotFoundError(f"{site / first_page}: build the site first")
    with _Server(site) as server, sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_context(
                viewport={"width": 1280, "height": 800}
            ).new_page()
            page.goto(server.base + first_page, wait_until="networkidle")
            server.settle()
            first = Visit(page.url, server.take())
            link = page.locator(NEXT_LINK)
            if not link.count():
                raise LookupError(f"{first_page} has no {NEXT_LINK} link")
            link.first.click()
            page.wait_for_load_state("networkidle")
            server.settle()
            following = Visit(page.url, server.take())
        finally:
            browser.close()
    return PageWeight(first, following)


def _kb(n: int) -> str:
    return f"{n / 1000:.1f} KB"


def report(weight: PageWeight) -> str:
    """The two visits, one line per response, then their totals."""
    lines = []
    for name, visit in (("first visit", weight.first), ("next", weight.next)):
        lines.append(f"{name}: {visit.url}")
        for s in sorted(visit.sent, key=lambda s: -s.raw):
            lines.append(f"  {s.raw:>8} {s.gzip:>8}  {s.path}")
        lines.append(
            f"  {name}: {len(visit.sent)} responses, "
            f"{_kb(visit.raw)} raw, {_kb(visit.gzip)} gzip"
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
