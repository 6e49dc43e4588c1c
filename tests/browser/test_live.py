"""Live code in Chromium under a real ``mkdocs serve`` of the lesson
(issue 32): edit and run slide 15's block on its reading page and in
the deck, a run stopped at the time limit, a run that writes into the
repository, requests the endpoint must refuse; and the static build,
which has no live code at all.

The serve runs with a 3 s live-run limit (``LESSON_LIVE_TIMEOUT``), so
the endless loop is stopped quickly; everything else is as ``make
serve`` runs it.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from lessonbuild.engine.guard import fingerprint
from tests.browser.serving import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
SLIDE = "slides/15-trace-d-model-8-h-2-d-k-4-seq-4-batch-1.html"
SNIPPET = "snippets/15_trace.py"
LINE = "d_model, h, T = 8, 2, 4  # d_k = d_model // h = 4"
EDITED = "d_model, h, T = 8, 4, 4  # d_k = d_model // h = 4"
LIMIT_S = 3


@pytest.fixture(scope="module")
def served():
    """``mkdocs serve --dirty`` of the lesson itself on a free port."""
    port = free_port()
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        LESSON_LIVE_TIMEOUT=str(LIMIT_S),
    )
    # As a contributor serves it: at "/" (the Pages build's SITE_URL, set
    # while pages.yml runs the tests, would mount it at /REPO/, and this
    # fixture waited 15 minutes for a page it never found there).
    env.pop("SITE_URL", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "serve",
            "--dirty",
            "--dev-addr",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"

    def up():
        assert proc.poll() is None, "mkdocs serve exited"
        try:
            urllib.request.urlopen(base + SLIDE, timeout=5)
        except OSError:
            return False
        return True

    try:
        wait_for(up, 900, "mkdocs serve to build the lesson")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def _config(base: str) -> dict:
    html = urllib.request.urlopen(base + SLIDE, timeout=30).read().decode()
    m = re.search(
        r'<script type="application/json" id="lesson-live-config">(.*?)'
        r"</script>",
        html,
    )
    assert m, "the served page carries no live-code configuration"
    return json.loads(m.group(1))


def _post(base, body: bytes, headers: dict) -> tuple[int, dict]:
    """A raw POST to the endpoint, headers exactly as given."""
    port = int(base.rsplit(":", 1)[1].strip("/"))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest("POST", _config(base)["endpoint"], skip_host=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def _console_errors(page) -> list[str]:
    errors = []
    page.on(
        "console",
        lambda m: errors.append(m.text) if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def _edit_line(page, block, old: str, new: str):
    """Replace one line in the block's editor, by keyboard."""
    block.locator(".cm-line", has_text=old).click()
    page.keyboard.press("Home")
    page.keyboard.press("Shift+End")
    page.keyboard.insert_text(new)


def _replace_all(page, block, code: str):
    block.locator(".cm-content").click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.insert_text(code)


def _output(block, status: str):
    """The run's output after ``block``, once it has ``status``."""
    out = block.locator(
        "xpath=following-sibling::section[contains(@class,'live-output')]"
        f"[@data-status='{status}']"
    )
    out.wait_for(timeout=120_000)
    return out


def _slide15_block(page):
    return (
        page.locator(".highlight[data-live]")
        .filter(has=page.locator(".filename", has_text=SNIPPET))
        .first
    )


def test_edit_and_run_on_the_reading_page(served, browser):
    """h = 2 -> h = 4: the new shapes beside the verified ones; an endless
    loop stopped at the limit, then the next run works; a program that
    writes into docs/ fails and leaves every file as it was."""
    page = browser.new_page()
    errors = _console_errors(page)
    try:
        page.goto(served + SLIDE)
        block = _slide15_block(page)
        bar = block.locator(".live-bar")
        bar.get_by_role("button", name="Edit").click()
        _edit_line(page, block, LINE, EDITED)
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "ok")
        add = out.locator(".live-add").all_inner_texts()
        gone = out.locator(".live-del").all_inner_texts()
        assert any("attn  : (1, 4, 4, 4)" in line for line in add), add
        assert any("attn  : (1, 2, 4, 4)" in line for line in gone), gone
        assert "Your run" in out.inner_text()
        # The table the unshown part publishes: changed cells side by side.
        changed = out.locator("td.live-changed").all_inner_texts()
        assert any(
            "(1, 2, 4, 4)" in c and "(1, 4, 4, 2)" in c for c in changed
        )
        # TeX shows as its source, not with the page's \( \) delimiters.
        cells = out.locator("td").all_inner_texts()
        assert any("W^Q" in c for c in cells), cells
        assert not any("\\(" in c for c in cells), cells

        _replace_all(page, block, "n = 0\nwhile True:\n    n += 1\n")
        bar.get_by_role("button", name="Run").click()
        out = _output(block, "timeout")
        assert f"Stopped after {LIMIT_S} s" in out.inner_text()
        assert "your code, line" in out.inner_text()
        verified = block.locator("pre code").text_content()
        _replace_all(page, block, verified.replace(LINE, EDITED))
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "ok")
        assert "attn  : (1, 4, 4, 4)" in out.inner_text()

        before = fingerprint(ROOT)
        _replace_all(
            page,
            block,
            'open("docs/index.md", "a").write("x")\n'
            'open("docs/new.md", "w").write("x")\n',
        )
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "error")
        assert "Read-only file system" in out.inner_text()
        assert fingerprint(ROOT) == before

        bar.get_by_role("button", name="Reset").click()
        assert block.locator(".cm-editor").count() == 0
        assert LINE in block.locator("pre code").inner_text()
        assert errors == []
    finally:
        page.close()


def test_an_excerpt_of_the_package_runs(served, browser):
    """Slide 12 shows mha_ref/mha.py's imports and forward joined (no
    splice puts an edit back): its Run answered "reload the page", which
    reloading never fixed. It runs in its module now."""
    page = browser.new_page()
    try:
        page.goto(served + "slides/12-step-by-step-dataflow.html")
        block = (
            page.locator(".highlight[data-live]")
            .filter(has=page.locator(".filename", has_text="mha_ref/mha.py"))
            .first
        )
        block.locator(".live-bar").get_by_role("button", name="Run").click()
        out = _output(block, "ok")
        assert "prints nothing" in out.inner_text()
    finally:
        page.close()


def test_the_endpoint_refuses_other_sites_and_missing_tokens(served):
    config = _config(served)
    host = served.split("//")[1].strip("/")
    shown = "print(1)"  # never reached: every request is refused first
    body = json.dumps({"path": SNIPPET, "shown": shown, "code": shown})
    good = {
        "Host": host,
        "Origin": f"http://{host}",
        "Content-Type": "application/json",
        "X-Lesson-Live-Token": config["token"],
    }
    for change in (
        {"X-Lesson-Live-Token": None},
        {"X-Lesson-Live-Token": "not-the-token"},
        {"Origin": "http://evil.example"},
        {"Origin": None},
        {"Host": f"evil.example:{host.split(':')[1]}"},
        {"Sec-Fetch-Site": "cross-site"},
    ):
        headers = {**good, **change}
        headers = {k: v for k, v in headers.items() if v is not None}
        status, answer = _post(served, body.encode(), headers)
        assert status == 403, (change, status, answer)
        assert answer["message"].startswith("refused")
    # A rebinding page reaches the server under its own name: no token.
    request = urllib.request.Request(
        served + SLIDE, headers={"Host": "evil.example"}
    )
    html = urllib.request.urlopen(request, timeout=30).read().decode()
    assert "lesson-live-config" not in html
    assert config["token"] not in html
    # The same request with the served site's headers runs.
    status, answer = _post(served, body.encode(), good)
    assert status == 409  # "print(1)" is not what slide 15 shows


def test_the_same_edit_in_the_deck_keeps_the_slide(served, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors = _console_errors(page)
    try:
        page.goto(served + "present.html#/15")
        # present.js fits all 55 slides first: slow on a loaded machine.
        page.wait_for_function(
            "document.documentElement.hasAttribute('data-deck-ready')",
            timeout=240_000,
        )
        slide = page.locator(".reveal .slides section.present")
        where = page.evaluate("JSON.stringify(Reveal.getIndices())")
        block = (
            slide.locator(".highlight[data-live]")
            .filter(has=page.locator(".filename", has_text=SNIPPET))
            .first
        )
        bar = block.locator(".live-bar")
        bar.get_by_role("button", name="Edit").click()
        _edit_line(page, block, LINE, EDITED)
        # Keys that move the deck edit the code while the editor has them
        # (a clicker's PageDown and PageUp moved the slide: a tester).
        for key in ("PageDown", "PageUp"):
            page.keyboard.press(key)
            assert (
                page.evaluate("JSON.stringify(Reveal.getIndices())") == where
            )
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Space")
        page.keyboard.press("Backspace")
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "ok")
        assert any(
            "attn  : (1, 4, 4, 4)" in line
            for line in out.locator(".live-add").all_inner_texts()
        )
        # The same slide; the verified Output's step, next, is taken by
        # the run (its block is hidden under "Your run").
        now = json.loads(page.evaluate("JSON.stringify(Reveal.getIndices())"))
        before = json.loads(where)
        assert (now["h"], now["v"]) == (before["h"], before["v"])
        verified = block.locator("xpath=following-sibling::div[1]")
        assert "visible" in verified.get_attribute("class")
        # The output stays on the stage: its bottom is inside it.
        stage = page.locator(".reveal .slides").bounding_box()
        box = out.bounding_box()
        assert box["y"] + box["height"] <= stage["y"] + stage["height"] + 1
        # A short edit that prints much: the output takes the room the
        # editor does not need (half the stage stayed empty below it).
        _replace_all(page, block, "for i in range(60):\n    print(i)\n")
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "error")  # the unshown rest needs `mha`
        box = out.bounding_box()
        bottom = stage["y"] + stage["height"]
        assert box["y"] + box["height"] <= bottom + 1
        assert bottom - (box["y"] + box["height"]) < 120, (box, stage)
        # It scrolls within its box, and says so at its foot until its
        # end is in sight.
        more = "(o) => o.classList.contains('live-more')"
        assert out.evaluate("(o) => o.scrollHeight > o.clientHeight + 40")
        assert out.evaluate(more)
        assert (
            out.evaluate("(o) => getComputedStyle(o, '::after').content")
            == '"more below"'
        )
        out.evaluate("(o) => { o.scrollTop = o.scrollHeight; }")
        page.wait_for_function(f"!({more})(document.querySelector("
                               "'section.live-output'))")  # fmt: skip
        code = block.locator("pre code").text_content()
        _replace_all(page, block, code.replace(LINE, EDITED))
        page.keyboard.press("ControlOrMeta+Enter")
        out = _output(block, "ok")
        # A run by Ctrl+Enter gave the keys back to the deck: a clicker's
        # Space and → move it on and type nothing into the code.
        edited = block.locator(".cm-content").text_content()
        # (On its Run button: the hidden Edit dropped it to the page.)
        expect(bar.get_by_role("button", name="Run")).to_be_focused()
        taken = page.evaluate("JSON.stringify(Reveal.getIndices())")
        page.keyboard.press("Space")
        page.wait_for_function(
            f"JSON.stringify(Reveal.getIndices()) !== {json.dumps(taken)}"
        )
        taken = page.evaluate("JSON.stringify(Reveal.getIndices())")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            f"JSON.stringify(Reveal.getIndices()) !== {json.dumps(taken)}"
        )
        assert block.locator(".cm-content").text_content() == edited
        assert errors == []
    finally:
        page.close()


def test_a_run_in_a_fold_fits_the_stage(served, browser):
    """A snippet in a fold's panel (it rises from the stage's foot):
    run without Edit, the output hung off the stage below 490 px of code;
    after Edit, it got 156 px over 270 px left empty (a tester, on slide
    47's variants code, since reading-only). Code and output share the
    panel, which reaches the stage's foot: slide 17's figure code, whose
    table the class reads on stage."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    try:
        page.goto(served + "present.html#/17/3")
        page.wait_for_function(
            "document.documentElement.hasAttribute('data-deck-ready')",
            timeout=240_000,
        )
        name = page.locator(".filename", has_text="snippets/17_cost_figure.py")
        fold = page.locator("details.deck-fold", has=name).first
        step = fold.get_attribute("data-fragment-index")
        page.evaluate(
            "([h, v, f]) => Reveal.slide(h, v, f)",
            [
                *(page.evaluate("Reveal.getIndices()")[k] for k in "hv"),
                int(step),
            ],
        )
        expect(fold).to_have_attribute("open", "")
        block = fold.locator(".highlight[data-live]").first
        stage = page.locator(".reveal .slides").bounding_box()
        bottom = stage["y"] + stage["height"]

        def fits(out, fills: bool):
            box = out.bounding_box()
            assert box["y"] + box["height"] <= bottom + 1, (box, stage)
            if fills:
                assert bottom - (box["y"] + box["height"]) < 30, box
                # (its table scrolls into sight within the box)
                assert out.evaluate("(o) => o.classList.contains('live-more')")

        run = block.locator(".live-bar").get_by_role("button", name="Run")
        run.click()
        out = _output(block, "ok")
        fits(out, True)
        # It prints its table as verified: no line added or missing.
        expect(out.locator(".live-add, .live-del")).to_have_count(0)
        block.get_by_role("button", name="Edit").click()
        expect(block.locator(".cm-editor")).to_be_visible()
        fits(out, False)  # (the editor is taller than the code was)
        out.evaluate("(o) => o.classList.add('old')")
        run.click()
        out = _output(block, "ok")
        expect(out).not_to_have_class(re.compile("old"))
        fits(out, True)
    finally:
        page.close()


def test_the_static_site_has_no_live_code(built_site, browser):
    for path in (SLIDE, "present.html"):
        html = (built_site / path).read_text(encoding="utf-8")
        assert "lesson-live-config" not in html
        assert "live.js" not in html
    page = browser.new_page()
    errors = _console_errors(page)
    try:
        for path, at in ((SLIDE, ""), ("present.html", "#/15")):
            page.goto((built_site / path).as_uri() + at)
            page.wait_for_load_state("load")
            assert page.locator(".live-bar, .live-editor").count() == 0
            assert page.locator(".highlight .filename").count() > 0
        assert errors == []
    finally:
        page.close()
