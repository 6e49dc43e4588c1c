"""The deck (present.html): what lessonbuild.present makes of the pages.

The first tests feed the deck's layout (lessonbuild.decklayout) small
rendered pages; the rest read the built site (tests/conftest.py builds it
once, or LESSON_SITE_DIR) and check it against the deck model
(lessonbuild.deck) and the slide files, never against present.py's own
output.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from lessonbuild import decklayout, present
from lessonbuild.deck import read_deck

ROOT = Path(__file__).resolve().parents[1]

CODE = (
    '<div class="highlight"><span class="filename">snippets/x.py</span>'
    "<pre><code>print(1)\n</code></pre></div>"
)
OUTPUT = (
    '<div class="highlight"><span class="filename">Output</span>'
    "<pre><code>1\n</code></pre></div>"
)
NOTES = (
    '<details class="instructor"><summary>Instructor notes</summary>'
    "<p><strong>Ask:</strong> what prints?</p>"
    "<p><strong>Time:</strong> 3 min</p></details>"
)
BREAK = '<div class="screen-break"></div>'


def _layout(html: str) -> decklayout.Layout:
    return decklayout.lay_out(html, number=7, page_url="slides/07-a.html")


def _screens(html: str) -> list[BeautifulSoup]:
    return [_soup(s) for s in _layout(html).screens]


def plain_phrase(text: str) -> str:
    """A phrase of a note's Markdown that renders as typed (no markup)."""
    for line in text.splitlines():
        line = re.sub(r"\*\*[^*]+\*\*", "", line)
        for words in re.split(r"[`\\$*\"_()\[\]<>&{}|]", line):
            if len(words.strip()) >= 12:
                return " ".join(words.split())
    raise AssertionError(f"no plain phrase in {text!r}")


def _notes(deck: BeautifulSoup) -> list[BeautifulSoup]:
    """Each slide's instructor notes, as the speaker view gets them: the
    deck carries them as one JSON list (present.js makes the asides)."""
    return [
        _soup(html)
        for html in json.loads(deck.select_one("#deck-notes").string)
    ]


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_reading_only_blocks_are_not_on_stage():
    html = (
        "<h1>T</h1><p>on stage</p>"
        '<div class="reading"><p>depth</p>' + CODE + "</div><p>after</p>"
    )
    (screen,) = _screens(html)
    assert screen.get_text() == "Ton stageafter", (
        'a <div class="reading"> block belongs to the reading page only'
    )


def test_an_author_marked_break_starts_a_new_screen():
    html = f"<h1>T</h1><p>a</p>{BREAK}<p>b</p>{CODE}{BREAK}<p>c</p>{BREAK}"
    screens = _screens(html)
    assert [s.get_text() for s in screens] == [
        "Ta",
        "bsnippets/x.pyprint(1)\n",
        "c",
    ]


def test_output_and_table_after_code_are_steps_but_code_is_not():
    html = f"<h1>T</h1><table id=a></table>{CODE}{OUTPUT}<table id=b></table>"
    (screen,) = _screens(html)
    steps = screen.select(".fragment")
    assert [s.get("id") or s.find("span").get_text() for s in steps] == [
        "Output",
        "s7-b",
    ], "expected the Output block and the table after the code as steps"
    assert "fragment" not in screen.select_one("#s7-a").get("class", []), (
        "a table before any code is the slide's own content, not a step"
    )


def test_a_screen_never_opens_on_a_hidden_step():
    html = f"<h1>T</h1>{CODE}{BREAK}{OUTPUT}<p>why</p>"
    first, second = _screens(html)
    assert not second.select(".fragment"), (
        "the first block of a screen is shown with it, not a blank gap"
    )
    # Nor under a bare heading (slide 47's third screen opened so).
    html = f"<h1>T</h1>{CODE}{BREAK}<h2>The core</h2>{OUTPUT}<p>why</p>"
    first, second = _screens(html)
    assert not second.select(".fragment"), "a heading alone is a gap too"


def test_every_fold_is_a_later_step_and_nothing_inside_it_is():
    html = (
        "<h1>T</h1><p>question</p>"
        '<details class="tip"><summary>Hint</summary><p>h</p></details>'
        '<details class="example" open><summary>Code</summary>'
        f"{CODE}{OUTPUT}</details>"
        '<section class="exercise ex-predict" data-ex-key="k">'
        '<details class="tip ex-key ex-key--hint"><summary>Hint'
        "</summary></details>"
        '<details class="success ex-key ex-key--answer"><summary>Answer'
        "</summary></details></section>"
    )
    (screen,) = _screens(html)
    *folds, hint, answer = screen.find_all("details")
    assert len(folds) == 2
    # An exercise's answer is a step too (present.js unlocks it when
    # shown), and its hint a step before it: a fold only a mouse opened
    # was out of a clicker's reach.
    for fold in [*folds, hint, answer]:
        assert {"fragment", "deck-fold"} <= set(fold["class"])
        assert not fold.has_attr("open"), "a step starts closed"
    assert not screen.select("details .fragment"), (
        "a step inside a fold would be dead: nothing on screen changes"
    )
    assert _layout(html).steps == 4


def _numbered(code: str) -> str:
    """A code block as pymdownx writes it: an anchor before each line."""
    lines = "".join(
        f'<a id="__codelineno-0-{i}" href="#__codelineno-0-{i}"></a>{line}\n'
        for i, line in enumerate(code.split("\n"), 1)
    )
    return (
        '<div class="highlight"><span class="filename">m.py</span>'
        f"<pre><code>{lines}</code></pre></div>"
    )


def test_a_steps_block_steps_through_list_items_and_statements():
    code = (
        "import torch\n"
        "\n"
        "def forward(x,\n"
        "            h):\n"
        '    """Docstring: no step."""\n'
        "    # a comment: no step\n"
        "    y = split(\n"
        "        x, h)\n"
        "    return y"
    )
    html = (
        '<h1>T</h1><div class="steps"><ol><li>one</li><li>two</li></ol>'
        f"{_numbered(code)}</div>{OUTPUT}"
    )
    layout = _layout(html)
    (screen,) = [_soup(s) for s in layout.screens]
    assert [li.get_text() for li in screen.select("li.fragment")] == [
        "one",
        "two",
    ]
    statements = [s.get_text() for s in screen.select("code .code-step")]
    assert statements == [
        "def forward(x,\n            h):\n",
        "    y = split(\n        x, h)\n",
        "    return y\n",
    ], "one step per statement: the def's header, then each body statement"
    assert screen.select_one("code").get_text() == code + "\n", (
        "every line stays on screen, in order"
    )
    assert not screen.select("div.steps"), "the wrapper is the author's marker"
    output = screen.find("span", class_="filename", string="Output").parent
    assert "fragment" in output["class"], "the Output after the code: a step"
    assert layout.steps == 2 + 3 + 1


def test_notes_move_to_speaker_view_with_timing():
    html = f"<h1>T</h1><p>a</p>{BREAK}<p>b</p>{NOTES}"
    deck = _soup(
        present.deck_html(
            [
                present.DeckSlide(
                    7, "A <title>", "Concept", "slides/07-a.html", html, 3
                )
            ],
            "Lesson",
        )
    )
    assert not deck.select(".deck-body details.instructor"), (
        "instructor notes must not be on the slide itself"
    )
    stack = deck.select_one("section[data-slide]")
    assert stack["data-title"] == "A <title>", "title must be escaped"
    assert stack["data-reading"] == "slides/07-a.html"
    screens = stack.find_all("section", recursive=False)
    assert len(screens) == 2
    assert not deck.select("aside"), "notes are data until the speaker view"
    (notes,) = _notes(deck)
    assert "what prints?" in notes.get_text()
    assert "Instructor notes" not in notes.get_text(), "summary left in"
    assert sum(int(s["data-timing"]) for s in screens) == 180


def test_ids_are_prefixed_and_references_follow():
    html = (
        '<label for="ex1-a">A</label><input id="ex1-a">'
        '<div id="ex1" aria-labelledby="ex1-label ex1-other">'
        '<p id="ex1-label">x</p></div><a href="#ex1">to it</a>'
        '<a href="#elsewhere">away</a>'
    )
    (screen,) = _screens(html)
    assert screen.select_one("label")["for"] == "s7-ex1-a"
    assert screen.select_one("#s7-ex1")["aria-labelledby"] == (
        "s7-ex1-label ex1-other"
    ), "only ids of this slide are renamed"
    assert [a["href"] for a in screen.select("a")] == ["#s7-ex1", "#elsewhere"]


def test_links_and_images_are_rebased_to_the_deck():
    html = (
        '<p><a href="../index.html#top">home</a>'
        ' <a href="https://pytorch.org/">torch</a>'
        ' <a href="16-next.html">next</a></p>'
        '<img src="../figures/a.svg" alt="a">'
    )
    (screen,) = _screens(html)
    hrefs = [a["href"] for a in screen.select("a")]
    assert hrefs == [
        "index.html#top",
        "https://pytorch.org/",
        "slides/16-next.html",
    ], "links of slides/07-a.html must resolve from the site root"
    assert screen.select_one("img")["src"] == "figures/a.svg"


def test_exercises_are_regions_with_the_decks_own_answers():
    # reveal.js takes every <section> under .slides for a slide, and the
    # deck's answers must not be the reading pages' (classroom mode).
    html = (
        '<section class="exercise ex-check" data-ex-kind="check" '
        'data-ex-key="lesson/ex1"></section>'
    )
    (screen,) = _screens(html)
    ex = screen.select_one(".exercise")
    assert ex.name == "div" and ex["role"] == "region"
    assert ex["data-ex-kind"] == "check"
    assert ex["data-ex-key"] == "deck/lesson/ex1"


# --- the built site ----------------------------------------------------


@pytest.fixture(scope="module")
def deck_doc(built_site):
    path = built_site / present.DECK
    assert path.is_file(), f"{path} missing: the lesson plugin writes it"
    return _soup(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def lesson():
    return read_deck(ROOT)


def test_one_stack_per_slide_in_order(deck_doc, lesson):
    stacks = deck_doc.select(".reveal .slides > section")
    assert [int(s["data-slide"]) for s in stacks] == [
        s.number for s in lesson.slides
    ], "present.html must hold one <section> per slide, in deck order"


def test_every_link_of_the_deck_and_its_notes_resolves(deck_doc, built_site):
    """Each relative link or image of present.html, the speaker notes'
    included (the speaker view resolves them from the deck), names a file
    of the site and, for a page, an id it has."""
    ids: dict[str, set[str]] = {}
    broken = []
    found = [("slide", el) for el in deck_doc.select("a[href], img[src]")]
    for notes in _notes(deck_doc):
        found += [("notes", el) for el in notes.select("a[href], img[src]")]
    for where, el in found:
        url = el.get("href") or el.get("src")
        if re.match(r"^([a-z][a-z0-9+.-]*:|/|#)", url, re.I):
            continue
        path, _, anchor = url.partition("#")
        if not (built_site / path).is_file():
            broken.append(f"{where}: {url}")
        elif anchor and path.endswith(".html"):
            if path not in ids:
                page = _soup((built_site / path).read_text(encoding="utf-8"))
                ids[path] = {t["id"] for t in page.select("[id]")}
            if anchor not in ids[path]:
                broken.append(f"{where}: {url} (no such id)")
    assert not broken, broken


def test_timing_comes_from_the_notes(deck_doc, lesson):
    wrong = []
    for slide, stack in zip(
        lesson.slides,
        deck_doc.select(".reveal .slides > section"),
        strict=True,
    ):
        minutes = sum(n.minutes for n in slide.notes if n.minutes)
        got = sum(
            int(s.get("data-timing", 0)) for s in stack.find_all("section")
        )
        if round(minutes * 60) != got:
            wrong.append(f"slide {slide.number}: {minutes} min, {got} s")
    assert not wrong, "data-timing differs from the notes' Time:\n" + (
        "\n".join(wrong)
    )


def test_the_speaker_notes_math_is_typeset(deck_doc):
    """Notes travel as JSON, where the deck's typesetting pass finds no
    formula: they are typeset before (the speaker view showed raw TeX)."""
    notes = [" ".join(map(str, n.contents)) for n in _notes(deck_doc)]
    assert not [n for n in notes if "\\(" in n or "\\[" in n], "raw TeX"
    assert any('class="katex' in n for n in notes), "no formula in notes?"


def test_every_note_is_in_the_speaker_view_only(deck_doc, lesson):
    assert not deck_doc.select(".deck-body details.instructor")
    for slide, notes in zip(lesson.slides, _notes(deck_doc), strict=True):
        said = " ".join(notes.get_text().split())
        for note in slide.notes:
            phrase = plain_phrase(note.text)
            assert phrase in said, f"slide {slide.number}: {phrase!r} lost"


def test_deck_loads_nothing_from_another_host(deck_doc, built_site):
    tags = deck_doc(["script", "link"])
    urls = [el.get("src") or el.get("href") for el in tags]
    urls = [u for u in urls if u]
    remote = [u for u in urls if re.match(r"^(\w+:)?//", u)]
    assert not remote, f"present.html loads from other hosts: {remote}"
    missing = [u for u in urls if not (built_site / u).is_file()]
    assert not missing, f"present.html links to missing files: {missing}"


def test_reveal_is_the_pinned_vendored_version():
    reveal = ROOT / "docs/assets/vendor/reveal"
    head = (reveal / "reveal.js").read_text(encoding="utf-8")[:400]
    assert "reveal.js" in head and (reveal / "LICENSE").is_file()
    notice = (reveal / "NOTICE.txt").read_text(encoding="utf-8")
    assert "6.0.2" in notice, "NOTICE.txt must name the vendored version"


def test_search_index_has_no_instructor_notes(built_site, lesson):
    index = json.loads(
        (built_site / "search" / "search_index.json").read_text("utf-8")
    )
    text = " ".join(d["text"] + " " + d["title"] for d in index["docs"])
    leaked, checked = [], 0
    for slide in lesson.slides:
        for note in slide.notes:
            # A distinctive line of each note, markup stripped.
            for line in note.text.splitlines():
                words = re.sub(r"[*`\\]|\\\(|\\\)", "", line).strip()
                if len(words) > 40 and "$" not in line and "\\" not in line:
                    checked += 1
                    if words[:40] in text:
                        leaked.append(f"slide {slide.number}: {words[:40]}")
                    break
    assert checked >= 10, f"only {checked} notes had a plain line to look for"
    assert not leaked, "instructor notes found in search_index.json:\n" + (
        "\n".join(leaked)
    )


MINUTES = re.compile(r"\*\*Time:\*\*\s*(\d+(?:\.\d+)?)\s*min")


def _planned(lesson) -> dict[int, float]:
    """Each slide's minutes, read here from its notes' text."""
    return {
        s.number: sum(
            float(m) for n in s.notes for m in MINUTES.findall(n.text)
        )
        for s in lesson.slides
    }


def test_every_slide_has_notes_with_a_time(lesson):
    missing = [n for n, minutes in _planned(lesson).items() if not minutes]
    assert not missing, (
        f"slides {missing} have no '??? instructor' notes with "
        "'**Time:** N min': every slide's time is planned, none defaulted"
    )
    lacking = [
        s.number
        for s in lesson.slides
        if not any(
            "**Ask:**" in n.text and "**Watch for:**" in n.text
            for n in s.notes
        )
    ]
    assert not lacking, f"slides {lacking}: notes without Ask / Watch for"


def test_the_class_period_is_the_notes_sum_everywhere(
    built_site, deck_doc, lesson
):
    total = sum(_planned(lesson).values())
    period = f"{total:g} min"
    home = _soup((built_site / "index.html").read_text("utf-8"))
    assert f"{period} + homework" in home.get_text(), (
        f"the home page must state the class period the notes plan, {period}"
    )
    pacing = [n.select_one(".deck-pacing") for n in _notes(deck_doc)]
    assert pacing and all(
        p and f"of the {period} class" in p.get_text() for p in pacing
    ), "every slide's speaker notes state the class period"


def test_ids_are_unique_in_the_deck(deck_doc):
    ids = Counter(el["id"] for el in deck_doc.find_all(id=True))
    twice = {i: n for i, n in ids.items() if n > 1}
    assert not twice, f"ids used more than once in present.html: {twice}"
    dangling = [
        el["for"]
        for el in deck_doc.find_all("label", attrs={"for": True})
        if el["for"] not in ids
    ]
    assert not dangling, f"labels for ids that are not in the deck: {dangling}"


def test_reading_only_content_is_on_the_reading_page_not_the_deck(
    built_site, deck_doc, lesson
):
    """Each slide's reading blocks are on its reading page and not in the
    deck (checked on the first block's text)."""
    stacks = deck_doc.select(".reveal .slides > section")
    checked = 0
    for slide, stack in zip(lesson.slides, stacks, strict=True):
        page = _soup((built_site / stack["data-reading"]).read_text("utf-8"))
        for block in page.select("article .reading"):
            words = " ".join(block.get_text(" ", strip=True).split()[:8])
            if not words:
                continue
            checked += 1
            assert words not in " ".join(
                stack.select_one(".deck-body")
                .get_text(" ", strip=True)
                .split()
            ), f"slide {slide.number}: reading-only text on stage: {words}"
    assert checked >= 20, f"only {checked} reading blocks found on the pages"


def test_an_exercises_variant_code_is_not_a_step_on_stage(deck_doc):
    """The code that computed a fill-in's or check's variants is the
    build's, for a reader who wants to verify the key: on every slide but
    one it was reading-only. Slide 47's came up as its own step after the
    answer, a screen of generator code over the exercise (an
    instructor's rehearsal at a clicker)."""
    on_stage = [
        fold.find_parent("section", attrs={"data-slide": True})["data-slide"]
        for fold in deck_doc.select(".reveal .slides details")
        if re.search(r"snippets/\w+_variants\.py", fold.get_text())
    ]
    assert not on_stage, (
        f"variant-generator code on stage on slides {on_stage}"
    )


def test_each_options_note_names_the_option_it_explains(deck_doc):
    """On stage an answer's panel lies over the options it explains
    (slides 36-41: the class saw "Why A tempts people" with A hidden):
    each note's heading shows its option's text as the option does,
    its drawn numbers included."""
    notes = deck_doc.select(".exercise dl.ex-key__notes dt[data-ex-option]")
    assert len(notes) >= 10, len(notes)
    for dt in notes:
        exercise = dt.find_parent(class_="exercise")
        letter = dt["data-ex-option"]
        option = exercise.select_one(
            f'li.ex-option[data-ex-option="{letter}"] .ex-option__text'
        )
        assert option is not None, (exercise.get("id"), letter)
        assert option.decode_contents() in dt.decode_contents(), (
            exercise.get("id"),
            letter,
            dt.get_text(" ", strip=True),
        )


def test_the_prose_after_a_stepped_output_is_a_step_after_it():
    """What a stepped Output is talked through in comes after it: slides
    31 and 47 stood their conclusion ("allclose False: the trap is
    silent") on stage over the blank the Output would fill. The lead-in
    before the code stays; the run of prose after it is one step, up to
    the next block that is not prose."""
    html = (
        "<h2>See it</h2><p>lead-in</p>"
        + CODE
        + OUTPUT
        + "<p>so: silent</p><ul><li>why</li></ul><h3>Next</h3><p>later</p>"
    )
    (screen,) = _screens(html)
    steps = screen.select(".fragment")
    assert [s.get_text(" ", strip=True) for s in steps] == [
        "Output 1",
        "so: silent why",
    ]
    assert not screen.find("p", string="lead-in").find_parent(
        class_="fragment"
    )
    assert not screen.find("p", string="later").find_parent(class_="fragment")


def test_a_notes_field_on_stage_says_its_tab_keeps_it():
    """The deck keeps answers in the tab (sessionStorage: a lecture
    leaves nothing behind), but a discussion's notes said "kept in this
    browser": a rehearsal's answers were gone in a new tab."""
    html = (
        '<section class="exercise ex-discussion" data-ex-key="k">'
        "{{ hint }}<textarea></textarea></section>"
    )
    template = (
        ROOT / "scripts/lessonbuild/exercises/templates/discussion.html"
    ).read_text()
    hint = re.search(r'<span class="ex-field-hint".*?</span>', template)[0]
    (screen,) = _screens(html.replace("{{ hint }}", hint))
    said = screen.select_one(".ex-field-hint")
    assert "browser" in hint and said.get_text() == "(kept in this tab)"
    assert "data-deck-text" not in str(said)


def test_a_table_the_notes_name_is_on_the_slides_stage(deck_doc, lesson):
    """A note that says "the table" is read beside its slide's stage: a
    rehearsal found slide 31's ("before showing the table") and slide
    50's ("as the table of Milestone 3") naming tables the deck leaves
    to the reading page, with nothing on stage to show."""
    names = re.compile(r"\b(the|this) table\b|\btable of\b", re.I)
    missing = []
    for slide, stack, notes in zip(
        lesson.slides,
        deck_doc.select(".reveal .slides > section"),
        _notes(deck_doc),
        strict=True,
    ):
        said = " ".join(notes.get_text().split())
        if names.search(said) and not stack.select(".deck-body table"):
            missing.append(f"slide {slide.number}: {names.search(said)[0]!r}")
    assert not missing, missing
