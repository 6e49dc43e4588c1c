"""References by id: slide numbers and option letters computed, never
typed (lessonbuild/exercises/refs.py)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from lessonbuild.deck import parse_slide, read_deck
from lessonbuild.exercises import RefError, RefIndex
from lessonbuild.fastcheck import fast_problems
from lessonbuild.problems import report

ROOT = Path(__file__).resolve().parents[1]

#: A slide number or an option letter typed as text: "slide 41",
#: "slides 30–31", "Slide 9's", "option C", "options C and D".
TYPED = re.compile(r"\b[Ss]lides? \d+|\b[Oo]ptions? [A-F]\b")


def typed_references(text: str) -> list[str]:
    return TYPED.findall(text)


def test_the_pattern_finds_what_went_stale():
    """The grep below is only worth its silence if it finds the forms the
    stale references had."""
    stale = (
        "its default averages the heads — option B's shape; "
        "(slide 41, option C); slides 30–41; Slide 9 says; options C and D"
    )
    assert typed_references(stale) == [
        "option B",
        "slide 41",
        "option C",
        "slides 30",
        "Slide 9",
        "options C",
    ]


def test_no_slide_number_or_option_letter_is_typed():
    """Slides (prose, notes, exercises), the home page, snippets and
    mha_ref (code comments, docstrings, the grader's hints) name places by
    id; a number or letter typed by hand is a reference that can go
    stale."""
    files = [
        *sorted((ROOT / "docs" / "slides").glob("*.md")),
        ROOT / "docs" / "index.md",
        *sorted((ROOT / "snippets").rglob("*.py")),
        *sorted((ROOT / "mha_ref").rglob("*.py")),
    ]
    found = []
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for hit in typed_references(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {hit!r}")
    assert not found, (
        'typed references; write {{ ref("<slide stem>") }} or '
        '{{ ref("<exercise id>", "<option id>") }} in Markdown, '
        "slides/<stem>.html#<anchor> in Python:\n" + "\n".join(found)
    )


def test_the_lesson_references_resolve_and_fastcheck_agrees():
    deck = read_deck(ROOT)
    index = RefIndex.from_deck(deck)
    assert not index.check(deck)
    # What the deck's references say, computed from the slides' order
    # and the options' order in their fences.
    assert index.letter("split-heads", "direct-view") == "C"
    assert index.letter("attn-shape", "head-average") == "A"
    assert index.letter("param-count-512", "divide-by-h") == "A"
    assert not [p for p in fast_problems(ROOT) if "ref(" in p.message]


def deck_of(pages: dict[str, str]):
    """A deck of in-memory pages, for RefIndex (which only reads them)."""

    class Deck:
        # No snippets/ or mha_ref/ with addresses in them: only the pages.
        root = ROOT / "tests" / "exercise_fixtures"
        docs = root / "docs"

        def __init__(self):
            self.pages = [
                parse_slide(path, textwrap.dedent(text).lstrip("\n"))
                for path, text in pages.items()
            ]

        def docs_rel(self, page):
            return page.path.removeprefix("docs/")

    return Deck()


PAGES = {
    "docs/slides/40-split.md": """
        ---
        title: Split
        slide: 40
        kind: Elimination
        part: P
        ---

        # Split

        ```exercise
        kind: eliminate
        id: split
        question: q
        options:
          - id: flat
            text: a
            rules_out: r
          - id: right
            text: b
            correct: true
        explanation: e
        ```
        """,
    "docs/slides/41-merge.md": """
        ---
        title: Merge
        slide: 41
        kind: Check
        part: P
        ---

        # Merge

        Option {{ ref("split", "right") }} of {{ ref("split") }} splits;
        see {{ ref("40-split", to="41-merge") }}.
        Broken: {{ ref("split", "direct") }} and {{ ref("42-nope") }},
        {{ ref(split) }}.
        """,
}


def test_references_render_numbers_letters_and_links():
    deck = deck_of(PAGES)
    index = RefIndex.from_deck(deck)
    here = "slides/41-merge.md"
    # The letter, marked with its exercise and its author's letter: the
    # page's exercise relabels it when it reshuffles its options.
    assert index.render("split", "right", page=here) == (
        '<span data-ex-in="ex-split" data-ex-letter-of="B">B</span>'
    )
    assert index.render("split", page=here) == (
        "[slide 40](40-split.md#ex-split)"
    )
    assert index.render("40-split", page="index.md", cap=True) == (
        "[Slide 40](slides/40-split.md)"
    )
    assert index.render("40-split", to="41-merge", page=here) == (
        "slides [40](40-split.md)–[41]()".replace("()", "(#)")
    )
    # Exercise text is rendered outside MkDocs: links to the built page.
    assert index.expand('in {{ ref("split") }}', page=here) == (
        "in [slide 40](40-split.html#ex-split)"
    )
    with pytest.raises(RefError, match="has no option with id 'left'"):
        index.render("split", "left", page=here)


def test_a_slide_named_without_its_number_survives_a_renumbering():
    """ref("merge") names docs/slides/41-merge.md while it is slide 41,
    and the same call names it as slide 42 once a slide is inserted
    before it (its file renamed 42-merge.md): no reference to rewrite."""
    here = "index.md"
    index = RefIndex.from_deck(deck_of(PAGES))
    assert index.render("merge", page=here) == "[slide 41](slides/41-merge.md)"
    moved = {
        path.replace("41-merge", "42-merge"): text.replace(
            "slide: 41", "slide: 42"
        )
        for path, text in PAGES.items()
    }
    index = RefIndex.from_deck(deck_of(moved))
    assert index.render("merge", page=here) == "[slide 42](slides/42-merge.md)"
    assert index.render("split", to="merge", page=here) == (
        "slides [40](slides/40-split.md#ex-split)–[42](slides/42-merge.md)"
    )
    with pytest.raises(RefError, match="did you mean 'merge'"):
        index.render("41-merge", page=here)


def test_every_broken_reference_is_reported_at_its_line():
    deck = deck_of(PAGES)
    problems = RefIndex.from_deck(deck).check(deck)
    assert [(p.path, p.line) for p in problems] == [
        ("docs/slides/41-merge.md", 12),
        ("docs/slides/41-merge.md", 12),
        ("docs/slides/41-merge.md", 13),
    ]
    text = "\n".join(p.message for p in problems)
    assert (
        "exercise 'split' has no option with id 'direct'; expected one "
        "of: flat, right" in text
    )
    assert "ref('42-nope') names no slide and no exercise" in text
    assert "expected ids as quoted strings" in text
    # The likeliest cause first: a slide's file renamed (the closest name
    # left may be another slide's; a contributor pointed a link there).
    assert "if a slide's file was renamed, rename it back" in text


def test_a_typed_slide_number_or_option_letter_names_the_call_to_write():
    """Typed into prose or an exercise's text, "slide 40" and "option B"
    fail at their lines, each naming the ref() that renders them; in
    code, or as a ref() call, they are fine."""
    page = "docs/slides/42-typed.md"
    text = """
        ---
        title: Typed
        slide: 42
        kind: Check
        part: P
        ---

        # Typed

        As slide 40 showed, `slide 40` in code is code.

        ```exercise
        kind: eliminate
        id: typed
        question: Which one? Not option B.
        options:
          - text: a
            rules_out: r
          - id: second
            text: b
            correct: true
        explanation: e
        ```

        ```python
        print("option B")
        ```
        """
    deck = deck_of({**PAGES, page: text})
    problems = RefIndex.from_deck(deck).check(deck)
    found = [(p.line, p.message) for p in problems if p.path == page]
    assert [line for line, _ in found] == [10, 15], found
    assert found[0][1].startswith("'slide 40' is typed by hand")
    assert '{{ ref("split") }}' in found[0][1]
    assert found[1][1].startswith("'option B' is typed by hand")
    assert '{{ ref("typed", "second") }}' in found[1][1]


def test_two_calls_in_one_expression_are_reported_not_a_crash():
    """``{{ ref("a") + ref("b") }}`` reads as one call whose arguments
    are ``"a") + ref("b"``: a problem at its line, not a traceback."""
    page = "docs/slides/43-sum.md"
    text = "---\ntitle: S\nslide: 43\n---\n\n"
    text += 'See {{ ref("40-split") + ref("x") }}.\n'
    deck = deck_of({**PAGES, page: text})
    problems = RefIndex.from_deck(deck).check(deck)
    found = [p for p in problems if p.path == page]
    assert [
        (p.line, "expected ids as quoted strings" in p.message) for p in found
    ] == [(6, True)]


def test_python_names_places_by_address_and_they_are_checked(tmp_path):
    """Snippets and mha_ref cannot run a macro: they name a page and an
    anchor by the built site's address, and a wrong one is reported."""
    deck = deck_of(PAGES)
    index = RefIndex.from_deck(deck)
    assert index._check_address("40-split", "ex-split-flat") is None
    assert "names no exercise or option" in index._check_address(
        "40-split", "ex-split-direct"
    )
    assert "names no slide" in index._check_address("39-split", None)


def test_a_reference_to_an_exercise_that_does_not_parse_is_not_reported():
    """One unquoted ': ' in slide 40's exercise: its YAML error is the
    problem (the exercise's validation reports it); the references to
    it are not reported too, each with a "did you mean" pointing at
    another exercise, while a reference broken on its own still is."""
    pages = dict(PAGES)
    pages["docs/slides/40-split.md"] = PAGES[
        "docs/slides/40-split.md"
    ].replace("explanation: e", "explanation: e: not quoted")
    deck = deck_of(pages)
    index = RefIndex.from_deck(deck)
    assert "split" not in index.exercises  # it did not parse
    problems = index.check(deck)
    assert [(p.line, p.message[:16]) for p in problems] == [
        (12, "ref('42-nope') n"),
        (13, "{{ ref(split) }}"),
    ]
    # Nor an address in Python naming it or its option (a contributor's
    # first pull request: one YAML error, and a snippet was blamed too).
    assert index._check_address("40-split", "ex-split") is None
    assert index._check_address("40-split", "ex-split-flat") is None
    assert "names no exercise" in index._check_address("40-split", "ex-x")
    # Unbroken, the same references resolve: they were only left out.
    assert len(RefIndex.from_deck(deck_of(PAGES)).check(deck_of(PAGES))) == 3


def test_the_same_problem_twice_is_reported_once():
    """Two references on one line naming the same missing exercise gave
    two lines no one could tell apart; the count is of what is shown."""
    merge = PAGES["docs/slides/41-merge.md"].replace(
        'see {{ ref("40-split", to="41-merge") }}.',
        'see {{ ref("gone") }} and {{ ref("gone") }}.',
    )
    deck = deck_of({**PAGES, "docs/slides/41-merge.md": merge})
    problems = RefIndex.from_deck(deck).check(deck)
    gone = [p for p in problems if "ref('gone')" in p.message]
    assert len(gone) == 2 and str(gone[0]) == str(gone[1])
    assert len(problems) == 5  # the three broken ones of PAGES, and these
    text = report(problems)
    assert text.count("ref('gone')") == 1
    assert text.endswith("\n4 problems found.")


def test_a_repeated_id_names_the_first_by_its_file_and_a_bare_option():
    """An exercise id used on two slides named the first as
    ``slides/40-split.md:10``, unlike every other message (its file is
    ``docs/slides/...``); an option reference into an exercise whose
    options have no id said "expected one of: (its options have no
    id)", not how to give one."""
    split = textwrap.dedent(PAGES["docs/slides/40-split.md"])
    again = split.replace("slide: 40", "slide: 42")
    deck = deck_of({**PAGES, "docs/slides/42-again.md": again})
    problems = RefIndex.from_deck(deck).check(deck)
    [problem] = [p for p in problems if "also the id" in p.message]
    assert problem.path == "docs/slides/42-again.md", problem
    assert "at docs/slides/40-split.md:10;" in problem.message, problem
    bare = re.sub(r"- id: \w+\n(\s*)", r"- ", split)
    index = RefIndex.from_deck(deck_of({"docs/slides/40-split.md": bare}))
    with pytest.raises(RefError, match="none: give the option an 'id: "):
        index.render("split", "right", page="index.md")


def test_an_option_letter_in_exercise_text_is_a_mark_not_a_tag():
    """Exercise text is Markdown with raw HTML off, so the letter's mark
    showed as a literal <span ...> tag in a model answer (slide 51): it
    is the mark the prose gets, made after the Markdown."""
    import lessonbuild.exercises as ex

    deck = deck_of(
        {
            **PAGES,
            "docs/slides/42-ask.md": """
            ---
            title: Ask
            slide: 42
            kind: Check
            part: P
            ---

            # Ask

            ```exercise
            kind: discussion
            prompt: Which split?
            hint: Read slide 40.
            answer: Option {{ ref("split", "right") }} of {{ ref("split") }}.
            ```
            """,
        }
    )
    slide = deck.pages[-1]
    result = ex.render_page(
        slide,
        url="slides/42-ask.html",
        fragments=ex.Fragments(),
        refs=RefIndex.from_deck(deck),
    )
    assert result.problems == []
    html = "".join(result.html.values())
    assert (
        'Option <span data-ex-in="ex-split" data-ex-letter-of="B">B</span>'
        ' of <a href="40-split.html#ex-split">slide 40</a>.'
    ) in html
    assert "&lt;span" not in html and "\u27e6" not in html
