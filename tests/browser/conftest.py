"""Browser fixtures: the exercise fixture site, served, and Chromium.

The site (tests/exercise_fixtures: one page per exercise kind; its
mkdocs.yml inherits the lesson's, so the real lesson plugin, its snippet
engine and the real docs/assets build it) is built once per session into
a temporary folder and served by http.server in a thread on a free port.
Playwright drives Debian's Chromium (its headless shell, below); no
browser is ever downloaded. Under pytest-xdist every test in this folder
runs on one worker (tests/conftest.py names their group), so this build, its
server and Chromium are made once per run; the lesson's own site is
``built_site`` (``make test`` passes its strict build in).
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lessonbuild import engine
from lessonbuild.deck import read_deck

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "exercise_fixtures"
#: Debian's headless shell of Chromium (package chromium-headless-shell,
#: which ``make browser`` installs next to ``chromium``): the same Blink
#: without a window system. Measured here, ``pytest -n 1 tests/browser``
#: (machine-wide busy CPU from /proc/stat): 409 CPU-s and 309 s with
#: /usr/bin/chromium, 278 CPU-s and 255 s with the shell. Where the
#: shell is missing (pytest run without ``make browser``), Chromium.
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = HEADLESS_SHELL
if not os.access(HEADLESS_SHELL, os.X_OK):
    CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def pytest_itemcollected(item):
    """Every test in this folder drives Chromium or serves a site for it:
    marked ``browser``, so ``make test-fast`` (``-m "not browser"``)
    leaves the whole folder out."""
    item.add_marker(pytest.mark.browser)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - stdlib name
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A page that moves on mid-download closes its socket (a
        BrokenPipeError): routine for a browser, not a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture(scope="session")
def fixture_server(tmp_path_factory):
    """Serve the built fixture site; yields its base URL."""
    site = tmp_path_factory.mktemp("exercise-site")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = _Server(("127.0.0.1", 0), handler)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    # The sitemap must list this address for instant navigation to work.
    env = dict(os.environ, EXERCISE_FIXTURE_SITE_URL=base)
    env.setdefault("NO_MKDOCS_2_WARNING", "1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(FIXTURE / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        # pymdownx.snippets resolves "snippets/..." from the working folder.
        cwd=FIXTURE,
        env=env,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        server.server_close()
        pytest.fail("fixture site build failed:\n" + result.stderr[-4000:])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield base
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def fixture_tables(fixture_server) -> dict:
    """The tables the fixture's snippet published, from the real engine.

    Runs after the site build, so every snippet run comes from the cache
    that build filled.
    """
    deck = read_deck(FIXTURE)
    result = engine.check(
        deck, timeout=120, jobs=1, cache_dir=FIXTURE / ".cache" / "engine"
    )
    assert not result.problems, [str(p) for p in result.problems]
    return result.tables


@pytest.fixture(scope="session")
def playwright():
    sync_api = pytest.importorskip("playwright.sync_api")
    # expect() waits for its condition; 5 s (Playwright's default) is too
    # short on 2 busy cores under `nice` (a keyboard commit's announcement
    # once took longer in CI). A condition that holds returns at once.
    sync_api.expect.set_options(timeout=30_000)
    with sync_api.sync_playwright() as p:
        yield p


def _launch(playwright, executable: str):
    if not os.access(executable, os.X_OK):
        pytest.skip(f"{executable} is missing (make browser installs it)")
    return playwright.chromium.launch(
        executable_path=executable, args=CHROMIUM_ARGS
    )


@pytest.fixture(scope="session")
def browser(playwright):
    chromium = _launch(playwright, CHROMIUM)
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def full_chromium(playwright):
    """Debian's Chromium itself, the browser an instructor presents
    with: its text wraps apart from the headless shell's (slide 43's
    screen measured 748 px tall in it, 691 in the shell, on a 720 px
    stage), so what must fit the stage is measured here."""
    chromium = _launch(playwright, "/usr/bin/chromium")
    yield chromium
    chromium.close()


def wait_for_widgets(page) -> None:
    """Return once the page's exercise widgets are live (none: at once)."""
    if page.locator("section.exercise").count():
        page.wait_for_selector("section.exercise[data-ex-ready]")


def wait_for_instant_navigation(page) -> None:
    """Return once Material follows this page's links in place.

    Material takes a click over only once its sitemap has loaded; a click
    before that reloads the page, and is replayed when the sitemap
    arrives. So the probe is a link to this very page: a click Material
    takes it cancels (an in-place visit to where we are), one it lets
    through is cancelled here, and a late replay goes nowhere.
    """
    page.wait_for_function(
        """() => {
            const probe = document.createElement("a");
            probe.href = location.pathname;
            document.body.append(probe);
            let taken = false;
            const look = ev => {
                taken = ev.defaultPrevented;
                ev.preventDefault();
            };
            window.addEventListener("click", look, { once: true });
            probe.click();
            probe.remove();
            return taken;
        }""",
        polling="raf",
    )


class Pages:
    """Opens pages of the fixture site in fresh contexts and checks that
    none of them logged a JavaScript error."""

    def __init__(self, browser, base: str):
        self.browser = browser
        self.base = base
        self.contexts = []
        self.errors: list[str] = []

    def open(self, name: str, *, width: int = 1280, clock=False, **options):
        """``clock``: Playwright's fake clock, installed before the page
        loads. Installed later, it swaps the timer functions under
        timers the page already runs: Material's scheduler then cleared a
        real interval through the fake clearInterval, and the interval
        fired on, throwing "executing a cancelled action"."""
        options.setdefault("viewport", {"width": width, "height": 900})
        context = self.browser.new_context(**options)
        self.contexts.append(context)
        context.set_default_timeout(10_000)
        page = context.new_page()
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on(
            "console",
            lambda m: m.type == "error" and self.errors.append(m.text),
        )
        if clock:
            page.clock.install()
        page.goto(self.base + name)
        if options.get("java_script_enabled", True):
            wait_for_widgets(page)
        return page

    def close(self):
        for context in self.contexts:
            context.close()


@pytest.fixture
def pages(browser, fixture_server):
    opened = Pages(browser, fixture_server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors: {opened.errors}"


@pytest.fixture(scope="session")
def lesson_server(built_site):
    """Serve the real lesson site (tests/conftest.py builds it once)."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def desktop_sweep(browser, lesson_server) -> dict:
    """Every lesson page opened once at 1280×800, each whole-page check
    run on it (sweep.py): {"pages": {label: findings}, "errors": [...]}."""
    from tests.browser import sweep

    return sweep.visit(browser, lesson_server, sweep.DESKTOP, axe=True)


@pytest.fixture(scope="session")
def phone_sweep(browser, lesson_server) -> dict:
    """The slides and notebook pages opened once at 390×844 (layout)."""
    from tests.browser import sweep

    return sweep.visit(browser, lesson_server, sweep.PHONE, axe=False)


@pytest.fixture
def lesson_pages(browser, lesson_server):
    opened = Pages(browser, lesson_server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors: {opened.errors}"


def attempt_nothing_then_something(page, section, kind):
    """Press the exercise's action with no answer, then answer for real.
    Returns the texts the empty try left in the feedback."""
    action = {
        "predict": "Commit prediction",
        "discussion": "Compare with the model answer",
        "eliminate": "Check my eliminations",
        "order": "Check order",
    }.get(kind, "Check")
    button = section.get_by_role("button", name=action, exact=True)
    button.click()
    empty = section.locator(".ex-feedback").inner_text()
    if kind in ("predict", "discussion"):
        section.locator("textarea").fill("my answer, with a reason")
    elif kind == "check":
        section.locator("label.ex-option__label").first.click()
    elif kind == "eliminate":
        strikes = section.locator('[data-ex-action="strike"]')
        for i in range(strikes.count() - 1):
            strikes.nth(i).click()
            section.locator(".ex-reason textarea").nth(i).fill(
                f"rules out option {i + 1}"
            )
    elif kind == "buckets":
        # Sorted, however wrongly: every item in one bucket is no try.
        for i, select in enumerate(section.locator("select.ex-select").all()):
            buckets = select.locator("option").count() - 1  # less "unsorted"
            select.select_option(index=1 + i % buckets)
    elif kind == "order":
        section.locator('[data-ex-action="down"]').first.click()
    elif kind == "fill-in":
        for cell in section.locator("input.ex-cell").all():
            cell.fill("1")
    button.click()
    return empty


def smallest_label(site: Path, src: str, width: float) -> float:
    """The smallest label of figure ``src`` (a site-relative SVG) drawn
    ``width`` CSS pixels wide: its font sizes (user units) times that
    width over its viewBox width."""
    svg = (site / src).read_text(encoding="utf-8")
    box = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg)[1])
    sizes = [float(x) for x in re.findall(r"font-size: ?([\d.]+)px", svg)]
    return min(sizes) * width / box
