"""Under ``mkdocs serve``, a failed rebuild shows its problems in the
browser, and the page recovers by itself when they are fixed (issue 14).

MkDocs 1.6 serve keeps every request waiting after a rebuild that
raises ("the server will appear stuck"); the lesson plugin instead lets
a serve build finish with every page replaced by the list of problems.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

from tests.browser.serving import free_port, wait_for
from tests.engine_fixtures.sites import SHARED_CACHE, make_site


@pytest.fixture
def served(tmp_path):
    root = make_site(tmp_path, "good")
    port = free_port()
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        SNIPPET_CACHE_DIR=str(SHARED_CACHE),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "serve",
            "--dev-addr",
            f"127.0.0.1:{port}",
            "--livereload",
        ],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"

    def up():
        try:
            urllib.request.urlopen(base, timeout=2)
        except OSError:
            return False
        return True

    try:
        wait_for(up, 240, "mkdocs serve to start")
        yield root, base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_failed_rebuild_shows_problems_then_recovers(served, browser):
    """Drift in a slide: the open page reloads into the problem list at
    file:line; the fix reloads it into the slide again."""
    root, base = served
    page = browser.new_page()
    try:
        page.goto(base + "slides/01-shapes/")
        page.wait_for_selector("text=round trip exact: True")
        slide = root / "docs/slides/01-shapes.md"
        good = slide.read_text()
        slide.write_text(good.replace("(2, 5, 8)", "(2, 8, 5)", 1))
        page.wait_for_selector("#build-failed", timeout=240_000)
        text = page.inner_text("#build-failed")
        assert (
            "docs/slides/01-shapes.md:14: output of snippets/01_shapes.py "
            "drifted" in text
        )
        slide.write_text(good)
        page.wait_for_selector("text=round trip exact: True", timeout=240_000)
        assert page.query_selector("#build-failed") is None
    finally:
        page.close()
