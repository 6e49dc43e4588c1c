"""The built site opened from disk (file://), and with JavaScript off.

An instructor with bad Wi-Fi presents from a copied site/ folder: every
page must show typeset math, live exercises and working previous/next,
and search must say that it needs a web server rather than vanish.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import Pages

pytestmark = pytest.mark.browser

SLIDE_20 = "slides/20-parameter-count-is-always-4d-model2.html"
SLIDE_37 = "slides/37-check-yourself-parameter-count.html"
# Raw TeX a reader must never see: \( \) \[ \] and $$.
RAW_TEX = re.compile(r"\\[()\[\]]|\$\$")


@pytest.fixture
def disk_pages(browser, built_site):
    opened = Pages(browser, built_site.as_uri() + "/")
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors: {opened.errors}"


def test_from_disk_math_is_typeset(disk_pages):
    page = disk_pages.open(SLIDE_20)
    formulas = page.locator(".arithmatex")
    assert formulas.count() >= 10
    assert page.locator(".arithmatex .katex").count() == formulas.count()
    found = RAW_TEX.findall(page.locator("article").inner_text())
    assert found == [], f"raw TeX visible on {SLIDE_20}: {found}"
    # KaTeX's fonts load from disk too (not a fallback serif).
    page.evaluate("document.fonts.ready")
    assert page.evaluate("document.fonts.check('16px KaTeX_Main')")


def test_from_disk_an_exercise_works(disk_pages):
    """Pages.open waits until the widget initialised (data-ex-ready)."""
    page = disk_pages.open(SLIDE_37)
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="C"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Why C tempts people")


def test_from_disk_previous_and_next_work(disk_pages):
    page = disk_pages.open(SLIDE_20)
    page.locator("a.md-footer__link--next").click()
    expect(page).to_have_url(re.compile(r"/slides/21-[^/]+\.html$"))
    expect(page.locator(".slide-number")).to_have_text("21 / 55")
    page.locator("a.md-footer__link--prev").click()
    expect(page).to_have_url(re.compile(r"/slides/20-[^/]+\.html$"))


def test_from_disk_search_says_it_needs_a_web_server(disk_pages):
    page = disk_pages.open(SLIDE_20)
    note = page.locator(".lesson-offline-search")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Search needs a web server")


def test_over_http_no_offline_note(lesson_pages):
    page = lesson_pages.open(SLIDE_20)
    expect(page.locator(".md-search__input")).to_be_visible()
    assert page.locator(".lesson-offline-search").count() == 0


def test_javascript_off_math_is_typeset_on_every_page(browser, built_site):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        pages = ["index.html"] + sorted(
            f"slides/{p.name}" for p in (built_site / "slides").glob("*.html")
        )
        assert len(pages) == 56
        raw, untypeset = {}, {}
        for name in pages:
            page.goto((built_site / name).as_uri())
            found = RAW_TEX.findall(page.locator("body").inner_text())
            if found:
                raw[name] = found[:3]
            plain = page.locator(".arithmatex:not(:has(.katex))").count()
            if plain:
                untypeset[name] = plain
        assert raw == {}, f"raw TeX visible with JavaScript off: {raw}"
        assert untypeset == {}, f"formulas not typeset: {untypeset}"
    finally:
        context.close()
