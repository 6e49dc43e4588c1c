"""Every exercise kind, driven in Chromium with the mouse and with the
keyboard, plus the no-JavaScript view, persistence, reset, instant
navigation, phone width and an axe scan (light and dark)."""

from __future__ import annotations

import functools
import html
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import lessonbuild.exercises as exercises
from lessonbuild.deck import parse_slide
from tests.browser.axe import serious_violations
from tests.browser.conftest import (
    wait_for_instant_navigation,
    wait_for_widgets,
)

pytestmark = pytest.mark.browser

FIXTURE_DOCS = Path(__file__).resolve().parents[1] / "exercise_fixtures"
KIND_PAGES = [
    "predict.html",
    "check.html",
    "eliminate.html",
    "buckets.html",
    "order.html",
    "fill-in.html",
    "discussion.html",
]


# --- helpers -----------------------------------------------------------------


def tab_to(page, selector: str, limit: int = 120) -> None:
    """Move focus with Tab (or Shift+Tab) until `selector` has it."""
    js = """s => {
      const a = document.activeElement, t = document.querySelector(s);
      if (!t) return "missing";
      if (a && a.matches(s)) return "here";
      if (!a || a === document.body) return "Tab";
      return a.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_PRECEDING
        ? "Shift+Tab" : "Tab";
    }"""
    for _ in range(limit):
        step = page.evaluate(js, selector)
        if step == "here":
            return
        assert step != "missing", f"no element matches {selector}"
        page.keyboard.press(step)
    raise AssertionError(f"Tab never reached {selector}")


def focused(page, selector: str) -> bool:
    return page.evaluate(
        "s => !!document.activeElement && document.activeElement.matches(s)",
        selector,
    )


def stored(page, section) -> object:
    key = section.get_attribute("data-ex-key")
    return page.evaluate("k => JSON.parse(localStorage.getItem(k))", key)


def drag(page, handle, target, at: tuple[float, float] | None = None):
    """Press on `handle`, move in steps to `target` (its centre, or the
    offset `at` from its top left corner), release.

    The handle is scrolled into view first: the mouse only reaches what
    is on screen, and 44 px targets make a list taller than the viewport.
    """
    handle.scroll_into_view_if_needed()
    box = target.bounding_box()
    if at is None:
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    else:
        x, y = box["x"] + at[0], box["y"] + at[1]
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(x, y, steps=8)
    page.mouse.up()


# --- predict -----------------------------------------------------------------


def test_predict_with_mouse(pages):
    """Commit a prediction: Correct and Why open beside it, and stay."""
    page = pages.open("predict.html")
    ex = page.locator("section.ex-predict")
    keys = ex.locator("details.ex-key")
    ex.get_by_role("button", name="Commit prediction").click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Type a prediction")
    expect(keys.first).not_to_have_attribute("open", "")
    box = ex.get_by_label("Your prediction")
    # The question pasted back is no prediction (it opened the answer).
    box.fill(ex.locator(".ex-prompt").inner_text())
    ex.get_by_role("button", name="Commit prediction").click()
    expect(ex.locator(".ex-feedback")).to_contain_text("in your own words")
    expect(keys.first).not_to_have_attribute("open", "")
    box.fill("")
    box.click()
    page.keyboard.type("(1, 4, 8) and (1, 2, 4, 4)")
    ex.get_by_role("button", name="Commit prediction").click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Prediction committed")
    for i in range(2):
        expect(keys.nth(i)).to_have_attribute("open", "")
    expect(ex.locator(".ex-key__answer")).to_be_visible()
    expect(ex.locator(".ex-key__why")).to_be_visible()
    expect(ex.locator(".ex-live")).to_contain_text("Answer: output")
    expect(box).not_to_be_editable()
    page.reload()
    ex = page.locator("section.ex-predict[data-ex-ready]")
    expect(ex.get_by_label("Your prediction")).to_have_value(
        "(1, 4, 8) and (1, 2, 4, 4)"
    )
    expect(ex.locator("details.ex-key").first).to_have_attribute("open", "")


def test_predict_with_keyboard(pages):
    page = pages.open("predict.html")
    ex = page.locator("section.ex-predict")
    tab_to(page, "section.ex-predict textarea")
    page.keyboard.type("same shape as the input")
    page.keyboard.press("Tab")
    assert focused(page, '[data-ex-action="commit"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("Prediction committed")
    expect(ex.locator("details.ex-key").nth(1)).to_have_attribute("open", "")
    # Focus moved to the revealed answer, not lost to <body>.
    assert focused(page, "details.ex-key--answer summary")


# --- check -------------------------------------------------------------------


def test_check_with_mouse(pages):
    """Wrong pick: says so, shows why that option tempts and a nudge,
    nothing about the other options or the right answer; the right pick
    brings the explanation."""
    page = pages.open("check.html")
    ex = page.locator("section.ex-check")
    key = ex.locator("details.ex-key")
    # No answer box before the first try.
    expect(key).to_be_hidden()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Pick an option")
    ex.locator('.ex-option[data-ex-option="C"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    feedback = ex.locator(".ex-feedback")
    expect(feedback).to_contain_text("Not quite. C is not it")
    expect(feedback).to_contain_text("pick another option")
    expect(feedback).to_contain_text("Why C tempts people")
    expect(feedback).to_contain_text("treating each head as a full")
    # Only C's feedback: not B's or D's, not the explanation.
    expect(feedback).not_to_contain_text("proportionally")
    expect(feedback).not_to_contain_text("Counts only W_O")
    expect(feedback).not_to_contain_text("Splitting")
    expect(feedback).not_to_contain_text("Correct")
    expect(ex.locator('.ex-option[data-ex-option="C"] .ex-mark')).to_have_text(
        "✗ wrong"
    )
    expect(ex.locator(".ex-live")).to_contain_text("Why C tempts people")
    expect(ex.locator(".ex-live")).not_to_contain_text("Splitting")
    # After a try the answer is there to open, but closed.
    expect(key).to_be_visible()
    expect(key).not_to_have_attribute("open", "")
    # It looks like an answer, not a pass: Material's "success" look (a
    # green tick) under "Not quite" read as one (a student's report).
    border, tick, icon, success = key.evaluate(
        """k => {
            const summary = k.querySelector("summary");
            const mark = getComputedStyle(summary, "::before");
            const root = getComputedStyle(document.documentElement);
            return [getComputedStyle(k).borderLeftColor, mark.backgroundColor,
                    mark.maskImage || mark.webkitMaskImage,
                    root.getPropertyValue("--md-admonition-icon--success")];
        }"""
    )
    assert "rgb(0, 200, 83)" not in (border, tick)  # Material's success
    assert icon.startswith("url(") and success.strip()
    assert success.strip() not in icon
    ex.locator('.ex-option[data-ex-option="A"] label').click()
    # Changing the pick clears the old verdict and marks.
    expect(feedback).to_be_hidden()
    expect(ex.locator('.ex-option[data-ex-option="C"]')).not_to_have_class(
        re.compile("is-wrong")
    )
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(feedback).to_contain_text("Correct. A is the answer")
    expect(feedback).to_contain_text("Splitting")
    expect(feedback).not_to_contain_text("tempts")
    expect(ex.locator('.ex-option[data-ex-option="A"] .ex-mark')).to_have_text(
        "✓ correct"
    )


def test_check_change_clears_correct(pages):
    """A checked right answer, then another pick: "Correct" goes, and
    the page shows no verdict until Check is pressed again."""
    page = pages.open("check.html")
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="A"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Correct")
    ex.locator('.ex-option[data-ex-option="D"] label').click()
    expect(ex.locator(".ex-feedback")).to_be_hidden()
    expect(ex.locator(".ex-mark--right")).to_have_count(0)
    assert "Correct" not in ex.inner_text()  # visible text only


def test_a_changed_pick_is_never_announced_late(pages):
    """The verdict reaches the live region a moment after Check (cleared
    first, so the same verdict twice is read twice). A pick changed inside
    that moment cancels it: a screen reader never hears "Correct" for an
    answer the student has already changed. The page's clock is paused,
    so the change lands inside the gap every time."""
    page = pages.open("check.html", clock=True)
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="A"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Correct")
    expect(ex.locator(".ex-live")).to_have_text("")  # still on its way
    ex.locator('.ex-option[data-ex-option="D"] label').click()
    expect(ex.locator(".ex-feedback")).to_be_hidden()
    page.clock.run_for(5000)  # every pending timer fires
    expect(ex.locator(".ex-live")).to_have_text("")
    assert "Correct" not in ex.inner_text()


def test_check_with_keyboard(pages):
    page = pages.open("check.html")
    ex = page.locator("section.ex-check")
    tab_to(page, "section.ex-check input.ex-radio")
    page.keyboard.press("ArrowDown")  # B
    page.keyboard.press("Tab")
    assert focused(page, '[data-ex-action="check"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("B is not it")
    expect(ex.locator(".ex-feedback")).to_contain_text("Why B tempts people")
    page.keyboard.press("Shift+Tab")  # back into the radio group, on B
    page.keyboard.press("ArrowUp")  # A
    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    expect(ex.locator(".ex-live")).to_contain_text("Correct. A is the answer")


def test_check_persists_and_resets(pages):
    page = pages.open("check.html")
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="D"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    assert stored(page, ex)["tried"] == ["D"]
    page.reload()
    ex = page.locator("section.ex-check[data-ex-ready]")
    # Restored, not re-graded: no verdict until Check is pressed.
    expect(ex.locator(".ex-feedback")).to_contain_text("Check it again")
    expect(ex.locator(".ex-feedback")).not_to_contain_text("wrong")
    expect(ex.locator(".ex-mark--wrong")).to_have_count(0)
    expect(ex.locator('input[value="D"]')).to_be_checked()
    ex.get_by_role("button", name="Reset this exercise").click()
    ex = page.locator("section.ex-check[data-ex-ready]")
    expect(ex.locator(".ex-feedback")).to_be_hidden()
    expect(ex.locator('input[value="D"]')).not_to_be_checked()
    expect(ex.locator(".ex-live")).to_contain_text("Exercise reset")
    assert stored(page, ex) is None


# --- eliminate ---------------------------------------------------------------


def test_eliminate_with_mouse(pages):
    """Striking says nothing about the option struck (the survivor least
    of all); Check wants every strike reasoned, then compares each reason
    with the author's and says whether the survivor is right."""
    page = pages.open("eliminate.html")
    ex = page.locator("section.ex-eliminate")
    feedback = ex.locator(".ex-feedback")
    ex.get_by_role("button", name="Strike option A").click()
    expect(feedback).to_be_hidden()
    expect(ex.locator(".ex-live")).not_to_contain_text("rules out A")
    expect(ex.locator('.ex-option[data-ex-option="A"]')).to_have_class(
        re.compile("is-struck")
    )
    expect(ex.get_by_label("What rules out A?")).to_be_visible()
    check = ex.get_by_role("button", name="Check my eliminations")
    check.click()
    expect(feedback).to_contain_text("Careful. Strike exactly 3 options")
    expect(ex.locator("details.ex-key")).to_be_hidden()
    ex.get_by_role("button", name="Strike option B").click()
    ex.get_by_role("button", name="Strike option D").click()
    check.click()
    expect(feedback).to_contain_text("Say what rules out A and B and D")
    for letter in "ABD":
        ex.get_by_label(f"What rules out {letter}?").fill(f"why {letter}")
    check.click()
    expect(feedback).to_contain_text("Not quite. C does not survive")
    a = ex.locator('.ex-option[data-ex-option="A"]')
    expect(a.locator(".ex-mark")).to_have_text("✗ survives")
    expect(a.locator(".ex-compare")).to_contain_text("Your reason: why A")
    expect(a.locator(".ex-compare")).to_contain_text("Nothing rules out A")
    b = ex.locator('.ex-option[data-ex-option="B"]')
    expect(b.locator(".ex-compare")).to_contain_text("no head axis at all")
    # Restoring A clears every verdict; striking C instead is right.
    ex.get_by_role("button", name="Restore option A").click()
    expect(feedback).to_be_hidden()
    expect(a.locator(".ex-compare")).to_be_hidden()
    ex.get_by_role("button", name="Strike option C").click()
    ex.get_by_label("What rules out C?").fill("view re-reads memory")
    check.click()
    expect(feedback).to_contain_text("Correct. A survives")
    expect(feedback).to_contain_text("packs")
    expect(a.locator(".ex-mark")).to_have_text("✓ survives")
    expect(ex.locator("details.ex-key")).to_be_visible()


def test_eliminate_with_keyboard(pages):
    page = pages.open("eliminate.html")
    ex = page.locator("section.ex-eliminate")
    for letter in "BCD":
        tab_to(page, f'[data-ex-action="strike"][data-ex-option="{letter}"]')
        page.keyboard.press("Enter")
        expect(ex.locator(".ex-live")).to_contain_text(f"{letter} struck")
        # Focus goes to the reason box of the option just struck.
        assert focused(page, f"#{ex.get_attribute('id')}-why{letter}")
        page.keyboard.type(f"because {letter}")
    tab_to(page, 'section.ex-eliminate [data-ex-action="check"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("A survives")
    page.reload()
    ex = page.locator("section.ex-eliminate[data-ex-ready]")
    expect(ex.locator(".is-struck")).to_have_count(3)
    expect(ex.get_by_label("What rules out C?")).to_have_value("because C")


# --- buckets -----------------------------------------------------------------


def bucket_truth(ex) -> dict[str, str]:
    """item id -> bucket id, read from the answer key."""
    truth = {}
    for group in ex.locator(".ex-key__group").all():
        bucket = group.get_attribute("data-ex-bucket")
        for li in group.locator("[data-ex-item]").all():
            truth[li.get_attribute("data-ex-item")] = bucket
    return truth


def test_buckets_with_mouse(pages):
    """Drag items by their handles (and pick one from its menu); a wrong
    placement is marked and the explanations (which say where every item
    goes) stay hidden; fixing it clears the mark; all right shows them."""
    page = pages.open("buckets.html")
    ex = page.locator("section.ex-buckets")
    truth = bucket_truth(ex)
    ids = list(truth)
    wrong_id = ids[-1]  # "context" belongs in bucket 1: put it in 0
    for item_id in ids:
        item = ex.locator(f'.ex-item[data-ex-item="{item_id}"]')
        bucket = "0" if item_id == wrong_id else truth[item_id]
        if item_id == ids[0]:
            item.locator("select").select_option(bucket)  # click a menu
            continue
        zone = ex.locator(f'.ex-zone[data-ex-zone="{bucket}"]')
        drag(page, item.locator(".ex-handle"), zone)
        expect(zone.locator(f'[data-ex-item="{item_id}"]')).to_have_count(1)
    expect(ex.locator(".ex-zone--pool .ex-item")).to_have_count(0)
    ex.get_by_role("button", name="Check", exact=True).click()
    feedback = ex.locator(".ex-feedback")
    expect(feedback).to_contain_text("6 of 7 items are in the right bucket")
    wrong = ex.locator(f'.ex-item[data-ex-item="{wrong_id}"]')
    expect(wrong.locator(".ex-mark")).to_have_text("✗ wrong bucket")
    expect(ex.locator(".ex-item .ex-mark--right")).to_have_count(6)
    explanations = ex.locator(".ex-zone__explanation")
    for explanation in explanations.all():
        expect(explanation).to_be_hidden()
    drag(
        page,
        wrong.locator(".ex-handle"),
        ex.locator(f'.ex-zone[data-ex-zone="{truth[wrong_id]}"]'),
    )
    # Moving an item clears every mark and the verdict.
    expect(wrong.locator(".ex-mark")).to_have_text("")
    expect(ex.locator(".ex-item .ex-mark--right")).to_have_count(0)
    expect(feedback).to_be_hidden()
    expect(wrong.locator("select")).to_have_value(truth[wrong_id])
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(feedback).to_contain_text("Correct. All 7 items")
    expect(explanations.first).to_contain_text("no head axis")
    expect(explanations.nth(1)).to_contain_text("inside the heads")


def test_every_item_in_one_bucket_is_no_sorting(pages):
    """A student put every item in the first bucket and pressed Check:
    the marks (right / wrong bucket) then gave the whole answer of a
    two-bucket exercise. That is no attempt: nothing is marked, no key
    opens; one item moved to another bucket is a sorting, and graded."""
    page = pages.open("buckets.html")
    ex = page.locator("section.ex-buckets")
    truth = bucket_truth(ex)
    assert len(set(truth.values())) > 1
    for item_id in truth:
        item = ex.locator(f'.ex-item[data-ex-item="{item_id}"]')
        item.locator("select").select_option("0")
    ex.get_by_role("button", name="Check", exact=True).click()
    feedback = ex.locator(".ex-feedback")
    expect(feedback).to_contain_text("Every item is in one bucket")
    expect(ex.locator(".ex-item .ex-mark--right")).to_have_count(0)
    assert ex.get_attribute("data-ex-tried") is None
    other = next(b for b in sorted(set(truth.values())) if b != "0")
    moved = next(i for i, b in truth.items() if b == other)
    ex.locator(f'.ex-item[data-ex-item="{moved}"] select').select_option(other)
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(feedback).to_contain_text("in the right bucket")


def test_buckets_with_keyboard(pages):
    """Tab to an unsorted item's bucket menu, arrow to the bucket; Tab
    goes on to the next unsorted item."""
    page = pages.open("buckets.html")
    ex = page.locator("section.ex-buckets")
    truth = bucket_truth(ex)
    ex.get_by_role("button", name="Check", exact=True).focus()
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("7 still unsorted")
    for _ in range(len(truth)):
        tab_to(page, "section.ex-buckets .ex-zone--pool .ex-select")
        item_id = page.evaluate(
            "() => document.activeElement.closest('.ex-item')"
            ".getAttribute('data-ex-item')"
        )
        for _ in range(int(truth[item_id]) + 1):
            page.keyboard.press("ArrowDown")
        item = ex.locator(f'.ex-item[data-ex-item="{item_id}"]')
        zone = ex.locator(f'.ex-zone[data-ex-zone="{truth[item_id]}"]')
        expect(zone.locator(f'[data-ex-item="{item_id}"]')).to_have_count(1)
        assert focused(page, f'.ex-item[data-ex-item="{item_id}"] select')
        expect(ex.locator(".ex-live")).to_contain_text("Moved to")
        expect(item.locator("select")).to_have_value(truth[item_id])
    tab_to(page, 'section.ex-buckets [data-ex-action="check"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("All 7 items")
    page.reload()
    ex = page.locator("section.ex-buckets[data-ex-ready]")
    for item_id, bucket in truth.items():
        zone = ex.locator(f'.ex-zone[data-ex-zone="{bucket}"]')
        expect(zone.locator(f'[data-ex-item="{item_id}"]')).to_have_count(1)
    expect(ex.locator(".ex-feedback")).to_contain_text("Check it again")
    expect(ex.locator(".ex-item .ex-mark--right")).to_have_count(0)


# --- order -------------------------------------------------------------------


def step_ids(ex) -> list[str]:
    return [
        li.get_attribute("data-ex-step")
        for li in ex.locator(".ex-steps .ex-step").all()
    ]


def test_order_with_mouse(pages):
    """Check the shuffled order (positions marked; the answer may be
    opened, but is not shown), then drag the steps into order."""
    page = pages.open("order.html")
    ex = page.locator("section.ex-order")
    truth = [
        li.get_attribute("data-ex-step")
        for li in ex.locator(".ex-key__steps [data-ex-step]").all()
    ]
    assert step_ids(ex) != truth
    feedback = ex.locator(".ex-feedback")
    # Checking the shuffle as it came is no attempt.
    ex.get_by_role("button", name="Check order").click()
    expect(feedback).to_contain_text("still in the shuffled order")
    expect(ex.locator("details.ex-key")).to_be_hidden()
    ex.get_by_role("button", name="Move down").first.click()
    ex.get_by_role("button", name="Check order").click()
    expect(feedback).to_contain_text(
        re.compile(r"steps (is|are) in the right place")
    )
    expect(ex.locator(".ex-step .ex-mark--wrong").first).to_have_text(
        "✗ wrong place"
    )
    expect(ex.locator("details.ex-key")).to_be_visible()
    expect(ex.locator("details.ex-key")).not_to_have_attribute("open", "")
    expect(ex.locator(".ex-key__why")).to_be_hidden()
    for i, step in enumerate(truth):
        if step_ids(ex)[i] == step:
            continue
        target = ex.locator(".ex-steps .ex-step").nth(i)
        handle = ex.locator(f'.ex-step[data-ex-step="{step}"] .ex-handle')
        drag(page, handle, target, at=(20, 3))
        assert step_ids(ex)[i] == step
        # Any move clears the verdict.
        expect(feedback).to_be_hidden()
    assert step_ids(ex) == truth
    ex.get_by_role("button", name="Check order").click()
    expect(feedback).to_contain_text("Correct. All 5 steps are in order")
    expect(ex.locator(".ex-key__why")).to_be_visible()
    expect(ex.locator(".ex-step .ex-mark--right")).to_have_count(5)


def test_order_with_keyboard(pages):
    """Move steps with their up buttons; focus stays on the button."""
    page = pages.open("order.html")
    ex = page.locator("section.ex-order")
    truth = [
        li.get_attribute("data-ex-step")
        for li in ex.locator(".ex-key__steps [data-ex-step]").all()
    ]
    for i, step in enumerate(truth):
        j = step_ids(ex).index(step)
        if j == i:
            continue
        up = f'.ex-step[data-ex-step="{step}"] [data-ex-action="up"]'
        tab_to(page, up)
        for _ in range(j - i):
            page.keyboard.press("Enter")
        assert focused(page, up)
        expect(ex.locator(".ex-live")).to_contain_text(
            f"Moved to position {i + 1} of 5"
        )
    assert step_ids(ex) == truth
    tab_to(page, 'section.ex-order [data-ex-action="check"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("All 5 steps are in order")
    page.reload()
    ex = page.locator("section.ex-order[data-ex-ready]")
    assert step_ids(ex) == truth


# --- fill-in -----------------------------------------------------------------


def test_fill_in_with_mouse(pages):
    """An empty Check is no try; a wrong form gets its explanation under
    its cell; editing clears every verdict; Try another draws new
    numbers; the right count is taken in several forms."""
    page = pages.open("fill-in.html")
    ex = page.locator("section.ex-fill-in").first
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Fill every cell")
    expect(ex.locator("details.ex-key")).to_be_hidden()
    cell = ex.locator('.ex-blank[data-ex-row="0"]')
    cell.locator("input").fill("4*d_model^2/h")
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(cell.locator(".ex-mark")).to_have_text("✗ wrong", timeout=30_000)
    expect(cell.locator("input")).to_have_attribute("aria-invalid", "true")
    expect(cell.locator(".ex-cell__why")).to_contain_text("Dividing by")
    expect(ex.locator("details.ex-key")).to_be_visible()
    cell.locator("input").fill("4 d_model^2")
    expect(cell.locator(".ex-mark")).to_have_text("")
    expect(cell.locator(".ex-cell__why")).to_be_hidden()
    expect(ex.locator(".ex-feedback")).to_be_hidden()
    # The key has shown the formula: only a number counts now.
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("hold a formula")
    d_model = int(ex.locator('[data-ex-var="d_model"]').inner_text())
    cell.locator("input").fill(f"{4 * d_model**2:,}")
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text(
        "Right for these numbers"
    )
    ex.get_by_role("button", name="Try another").click()
    fresh = int(ex.locator('[data-ex-var="d_model"]').inner_text())
    assert fresh != d_model
    expect(cell.locator("input")).to_have_value("")
    expect(ex.locator("details.ex-key")).to_be_hidden()
    for typed in (f"{4 * fresh**2:,}", f"4*{fresh}**2", f"4 * {fresh}^2"):
        cell.locator("input").fill(typed)
        ex.get_by_role("button", name="Check", exact=True).click()
        expect(ex.locator(".ex-feedback")).to_contain_text(
            "Right for these numbers"
        )

    shapes = page.locator("section#ex-shapes")
    expect(shapes.locator(".ex-label")).to_have_text("Fill in the shapes")
    B, T, d = (
        shapes.locator(f'[data-ex-var="{v}"]').first.inner_text()
        for v in ("B", "T", "d_model")
    )
    shapes.locator('.ex-blank[data-ex-row="0"] input').fill(
        f"torch.Size([{B}, {T}, {d}])"
    )
    shapes.locator('.ex-blank[data-ex-row="1"] input').fill("(B, T, T)")
    shapes.get_by_role("button", name="Check", exact=True).click()
    expect(shapes.locator(".ex-feedback")).to_contain_text("1 of 2 right")
    expect(
        shapes.locator('.ex-blank[data-ex-row="1"] .ex-cell__why')
    ).to_contain_text("Head-averaged")
    key = shapes.get_attribute("data-ex-key")
    assert key.endswith(":fill-in.html:shapes")


def test_the_judge_comes_with_a_first_check_not_with_the_page(pages):
    """A first visit downloads neither the fill-in judge nor mathjs (the
    page-weight budget); the first Check loads both, and one that did not
    load is tried again on the next Check."""
    page = pages.open("fill-in.html")
    ex = page.locator("section.ex-fill-in[data-ex-ready]").first

    def loaded():
        names = page.evaluate(
            "performance.getEntriesByType('resource').map(e => e.name)"
        )
        # judge.js, or judge.min.js where the site is minified.
        return {n.rsplit("/", 1)[1].split(".")[0] for n in names}

    assert {"judge", "math"}.isdisjoint(loaded()), loaded()
    page.route("**/judge*.js", lambda route: route.abort())
    cell = ex.locator('.ex-blank[data-ex-row="0"] input')
    cell.fill("4 d_model^2")
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text(
        "did not load", timeout=30_000
    )
    expect(ex.locator("details.ex-key")).to_be_hidden()
    page.unroute("**/judge*.js")
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text(
        "Right for these numbers", timeout=30_000
    )
    assert {"judge", "math"} <= loaded(), loaded()
    # The loads refused above (the cell's focus starts one, and a Check
    # after it failed starts another), as the browser logs them.
    assert pages.errors, "the refused load was not logged"
    assert all("ERR_FAILED" in e for e in pages.errors), pages.errors
    pages.errors.clear()


def test_fill_in_with_keyboard(pages):
    page = pages.open("fill-in.html")
    ex = page.locator("section.ex-fill-in").first
    tab_to(page, "section.ex-fill-in input.ex-cell")
    page.keyboard.type("4 d_model^2")
    page.keyboard.press("Enter")  # Enter in a cell checks
    expect(ex.locator(".ex-live")).to_contain_text(
        "Right for these numbers", timeout=30_000
    )
    page.keyboard.press("Tab")
    assert focused(page, 'section.ex-fill-in [data-ex-action="check"]')
    page.reload()
    ex = page.locator("section.ex-fill-in[data-ex-ready]").first
    expect(ex.locator(".ex-blank input").first).to_have_value("4 d_model^2")
    expect(ex.locator(".ex-feedback")).to_contain_text("Check it again")
    expect(ex.locator(".ex-blank .ex-mark--right")).to_have_count(0)


# --- discussion --------------------------------------------------------------


def test_discussion_with_mouse(pages):
    """Notes persist; the hint is there from the start, the model answer
    only after something is written and compared; reset clears."""
    page = pages.open("discussion.html")
    ex = page.locator("section.ex-discussion")
    model = ex.locator("details.ex-key--answer")
    expect(model).to_be_hidden()
    compare = ex.get_by_role("button", name="Compare with the model answer")
    compare.click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Write your answer")
    expect(model).to_be_hidden()
    ex.locator("details.ex-key--hint summary").click()
    expect(ex.locator(".ex-key__hint")).to_be_visible()
    expect(ex.locator(".ex-live")).to_contain_text("Hint: One sentence")
    ex.get_by_label("Your notes").fill("a soft lookup")
    compare.click()
    expect(ex.locator(".ex-key__answer")).to_contain_text("soft lookup")
    page.reload()
    ex = page.locator("section.ex-discussion[data-ex-ready]")
    expect(ex.get_by_label("Your notes")).to_have_value("a soft lookup")
    expect(ex.locator("details.ex-key--answer")).to_be_visible()
    ex.get_by_role("button", name="Reset this exercise").click()
    ex = page.locator("section.ex-discussion[data-ex-ready]")
    expect(ex.get_by_label("Your notes")).to_have_value("")
    expect(ex.locator("details.ex-key--answer")).to_be_hidden()
    assert stored(page, ex) is None


def test_discussion_with_keyboard(pages):
    page = pages.open("discussion.html")
    ex = page.locator("section.ex-discussion")
    tab_to(page, "section.ex-discussion textarea")
    page.keyboard.type("notes by keyboard")
    tab_to(page, "section.ex-discussion details.ex-key--hint summary")
    page.keyboard.press("Enter")
    expect(ex.locator("details.ex-key--hint")).to_have_attribute("open", "")
    tab_to(page, 'section.ex-discussion [data-ex-action="commit"]')
    page.keyboard.press("Enter")
    expect(ex.locator(".ex-live")).to_contain_text("Model answer:")
    assert stored(page, ex)["notes"] == "notes by keyboard"


def test_a_hint_opened_just_before_compare_does_not_drown_it(pages):
    """Under load a details element's "toggle" event can come after the
    next key press: held back 300 ms here, the hint opened by Enter must
    not replace the model answer that Compare, pressed next, announces."""
    page = pages.open("discussion.html")
    page.context.add_init_script(
        """(() => {
          const add = EventTarget.prototype.addEventListener;
          EventTarget.prototype.addEventListener = function (t, f, o) {
            if (t !== "toggle") return add.call(this, t, f, o);
            const late = (e) => setTimeout(() => {
              f(e);
              window.__toggled = (window.__toggled || 0) + 1;
            }, 300);
            return add.call(this, t, late, o);
          };
        })()"""
    )
    page.reload()
    wait_for_widgets(page)
    ex = page.locator("section.ex-discussion")
    ex.get_by_label("Your notes").fill("a soft lookup")
    ex.locator("details.ex-key--hint summary").press("Enter")
    ex.get_by_role("button", name="Compare with the model answer").press(
        "Enter"
    )
    live = ex.locator(".ex-live")
    expect(live).to_contain_text("Model answer:")
    # Once the held-back toggles (the hint's, the model answer's) have
    # been handled: still the answer, not the hint.
    page.wait_for_function("() => window.__toggled >= 2")
    expect(live).to_contain_text("Model answer:")


# --- without JavaScript ------------------------------------------------------


def _fixture_exercises(name: str, tables: dict):
    """The fixture page's exercises, parsed with the real package."""
    rel = "docs/" + name.replace(".html", ".md")
    slide = parse_slide(rel, (FIXTURE_DOCS / rel).read_text())
    fragments = exercises.Fragments(
        ["pymdownx.arithmatex", "pymdownx.superfences"],
        {"pymdownx.arithmatex": {"generic": True}},
    )
    result = exercises.render_page(
        slide, url=name, fragments=fragments, tables=tables
    )
    assert not result.problems
    return result.exercises, fragments


def _texts(ex, fragments) -> list[str]:
    """Every text value of an exercise, as the no-JS page shows it."""
    values = []
    for name in ("prompt", "question", "answer", "why", "explanation"):
        values.append(getattr(ex, name, None))
    values.append(getattr(ex, "hint", None))
    for option in getattr(ex, "options", []):
        values += [option.text, option.note]
    for bucket in getattr(ex, "buckets", []):
        values += [bucket.name, bucket.explanation, *bucket.items]
    values += getattr(ex, "steps", [])
    out = []
    for value in filter(None, values):
        shown = html.unescape(re.sub(r"<[^>]+>", "", fragments.block(value)))
        # Math is typeset at build time: compare the words around it.
        for piece in re.split(r"\\\(.*?\\\)|\\\[.*?\\\]", shown, flags=re.S):
            out += [ln.strip() for ln in piece.splitlines() if ln.strip()]
    if isinstance(ex, exercises.model.FillIn):
        # The prompt shows the first variant's numbers; the key the
        # formulas (no variant's answer is text on the page).
        out = [t for t in out if not re.search(r"\{\w+\}", t)]
        out += [cell.formula for cell in ex.cells]
    return out


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", KIND_PAGES)
def test_everything_readable_without_javascript(pages, name, fixture_tables):
    """No JS: every question, option, item, hint and answer is on the page
    (answers in closed <details> that open natively); no dead controls."""
    page = pages.open(name, java_script_enabled=False)
    expected, fragments = _fixture_exercises(name, fixture_tables)
    sections = page.locator("section.exercise")
    expect(sections).to_have_count(len(expected))
    for i, ex in enumerate(expected):
        section = sections.nth(i)
        expect(section.locator(".ex-prompt")).to_be_visible()
        expect(section.locator(".ex-actions")).to_be_hidden()
        for control in section.locator("input, select, textarea").all():
            expect(control).to_be_hidden()
        keys = section.locator("details.ex-key")
        assert keys.count() >= 1
        for d in keys.all():
            expect(d).not_to_have_attribute("open", "")
            d.locator("summary").click()  # native <details>, no JS
            expect(d).to_have_attribute("open", "")
        shown = _squash(section.inner_text())
        for text in _texts(ex, fragments):
            assert _squash(text) in shown, f"{name}: missing {text!r}"


# --- navigation, phone width, accessibility ----------------------------------


def test_instant_navigation_initialises_widgets(pages):
    """Material swaps pages without a reload: widgets still come alive."""
    page = pages.open("index.html")
    page.evaluate("() => { window.__sameDocument = true; }")
    wait_for_instant_navigation(page)
    page.get_by_role("link", name="Check", exact=True).last.click()
    page.wait_for_url("**/check.html")
    ex = page.locator("section.ex-check[data-ex-ready]")
    expect(ex).to_have_count(1)
    assert page.evaluate("() => window.__sameDocument === true")
    ex.locator('.ex-option[data-ex-option="A"] label').click()
    ex.get_by_role("button", name="Check", exact=True).click()
    expect(ex.locator(".ex-feedback")).to_contain_text("Correct")
    page.go_back()
    page.wait_for_url("**/index.html")
    page.go_forward()
    page.wait_for_url("**/check.html")
    # The swapped-in page's widget comes alive again (waited for, not
    # timed) and brings the answer back, unchecked: a verdict follows
    # the answer, so it is never restored on its own.
    ex = page.locator("section.ex-check[data-ex-ready]")
    expect(ex).to_have_count(1)
    expect(ex.locator('input[value="A"]')).to_be_checked()
    expect(ex.locator(".ex-feedback")).to_contain_text("Check it again")
    assert page.evaluate("() => window.__sameDocument === true")


@pytest.mark.parametrize("name", KIND_PAGES)
def test_phone_width(pages, name):
    """At 390 px nothing overflows sideways and the controls show."""
    page = pages.open(name, width=390, has_touch=True, is_mobile=True)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390
    for section in page.locator("section.exercise").all():
        expect(section.locator(".ex-actions")).to_be_visible()
        box = section.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390


def test_phone_tap(pages):
    page = pages.open("check.html", width=390, has_touch=True, is_mobile=True)
    ex = page.locator("section.ex-check")
    ex.locator('.ex-option[data-ex-option="B"] label').tap()
    ex.get_by_role("button", name="Check", exact=True).tap()
    expect(ex.locator(".ex-feedback")).to_contain_text("B is not it")


def _interact(page, name: str) -> None:
    """Put each kind into its feedback state, so axe sees the marks."""
    ex = page.locator("section.exercise").first
    if name == "predict.html":
        ex.locator("textarea").fill("my guess: one map per head")
        ex.locator('[data-ex-action="commit"]').click()
    elif name == "check.html":
        ex.locator('.ex-option[data-ex-option="B"] label').click()
        ex.locator('[data-ex-action="check"]').click()
    elif name == "eliminate.html":
        for letter in "ABD":
            ex.locator(
                f'[data-ex-option="{letter}"][data-ex-action="strike"]'
            ).click()
            ex.locator(f".ex-option[data-ex-option='{letter}'] textarea").fill(
                f"rules out {letter}"
            )
        ex.locator('[data-ex-action="check"]').click()
    elif name == "buckets.html":
        for n in range(7):
            item = ex.locator(f'.ex-item[data-ex-item="{n}"] select')
            item.select_option("1" if n < 3 else "0")
            if n == 3:  # some still unsorted: a warning
                ex.locator('[data-ex-action="check"]').click()
        ex.locator('[data-ex-action="check"]').click()
    elif name == "order.html":
        ex.locator('[data-ex-action="down"]').first.click()
        ex.locator('[data-ex-action="check"]').click()
    elif name == "fill-in.html":
        ex.locator("input.ex-cell").first.fill("12")
        ex.locator('[data-ex-action="check"]').click()
        expect(ex.locator(".ex-blank .ex-mark").first).not_to_have_text(
            "", timeout=30_000
        )
    elif name == "discussion.html":
        ex.locator("textarea").fill("my answer, in a sentence")
        ex.locator('[data-ex-action="commit"]').click()
        ex.locator("details.ex-key--hint summary").click()
    # Every kind now shows its verdict (or, for a discussion, its answer).
    expect(ex.locator(".ex-feedback")).to_be_visible()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", KIND_PAGES)
def test_axe_finds_nothing_serious(pages, name, scheme):
    """axe-core on the widgets, before and after answering, in both
    palettes: no serious or critical violations."""
    page = pages.open(name, color_scheme=scheme)
    want = "slate" if scheme == "dark" else "default"
    assert (
        page.evaluate(
            "() => document.body.getAttribute('data-md-color-scheme')"
        )
        == want
    )
    for stage in ("fresh", "answered"):
        if stage == "answered":
            _interact(page, name)
        serious = serious_violations(page, "section.exercise")
        assert not serious, f"{name} {scheme} {stage}: {serious}"


def _fulfill_with(route, request=None, **response):
    route.fulfill(**response)


def test_axe_without_javascript(pages):
    """The no-JS view passes axe too. Playwright cannot evaluate axe in a
    context with JavaScript off, so serve each page with its scripts
    stripped: the same DOM a browser without JavaScript builds."""
    from urllib.request import urlopen

    for name in KIND_PAGES:
        url = pages.base + name
        with urlopen(url) as response:
            source = response.read().decode()
        static = re.sub(r"<script\b.*?</script>", "", source, flags=re.S)
        page = pages.open("index.html")
        page.route(
            url,
            functools.partial(
                _fulfill_with, body=static, content_type="text/html"
            ),
        )
        page.goto(url)
        assert page.locator("script").count() == 0
        expect(page.locator(".ex-actions").first).to_be_hidden()
        serious = serious_violations(page, "section.exercise")
        assert not serious, f"{name}: {serious}"
