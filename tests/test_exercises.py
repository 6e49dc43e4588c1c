"""lessonbuild.exercises: finding fences, validating, rendering (no MkDocs)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
from itertools import pairwise
from pathlib import Path

import pytest

import lessonbuild.exercises as ex
from lessonbuild.deck import parse_slide
from lessonbuild.engine.prose import expand_values
from lessonbuild.exercises.model import Buckets, Check, FillIn, Order

ROOT = Path(__file__).resolve().parents[1]
TABLES = {
    "23_params.by_heads": {
        "columns": ["h", "d_k", "params (d=512)"],
        "rows": [["1", "512", "1,048,576"], ["8", "64", "1,048,576"]],
    },
    "47_variants.forward": {
        "columns": ["B", "T", "d_model", "h", "out", "attn_w"],
        "rows": [
            ["2", "5", "12", "3", "(2, 5, 12)", "(2, 3, 5, 5)"],
            ["5", "7", "12", "3", "(5, 7, 12)", "(5, 3, 7, 7)"],
        ],
    },
    # First variants a wrong answer reads right in (a student's study
    # pass): B = h, and h = 4 with 4*d_model^2.
    "47_variants.same": {
        "columns": ["B", "T", "d_model", "h", "out", "attn_w"],
        "rows": [
            ["2", "5", "8", "2", "(2, 5, 8)", "(2, 2, 5, 5)"],
            ["5", "7", "12", "3", "(5, 7, 12)", "(5, 3, 7, 7)"],
            ["3", "7", "12", "3", "(3, 7, 12)", "(3, 3, 7, 7)"],
        ],
    },
    "24_variants.params": {
        "columns": ["d_model", "h", "params"],
        "rows": [["256", "4", "262,144"], ["384", "6", "589,824"]],
    },
}
#: A fill-in over TABLES' variants, its cell's formula on line 6.
FILL = """\
kind: fill-in
prompt: For B = {B} and T = {T}
variants: 47_variants.forward
cells:
  - label: "`attn_w`"
    column: attn_w
    formula: (B, h, T, T)
    wrong:
      - form: (B, T, T)
        why: averaged over the heads
    otherwise: one map per head
"""


@pytest.fixture(scope="module")
def fragments():
    return ex.Fragments(
        ["pymdownx.arithmatex", "pymdownx.superfences", "md_in_html"],
        {"pymdownx.arithmatex": {"generic": True}},
    )


def page(body: str) -> str:
    return textwrap.dedent(body).lstrip("\n")


def render_text(text, fragments, *, path="p.md", url="p.html", tables=None):
    """Read ``text`` with the deck's parser, then render its exercises."""
    slide = parse_slide(path, text)
    return ex.render_page(
        slide,
        url=url,
        fragments=fragments,
        tables=TABLES if tables is None else tables,
    )


def problems_of(markdown, fragments, tables=None):
    result = render_text(
        page(markdown),
        fragments,
        path="docs/slides/37-x.md",
        url="slides/37-x.html",
        tables=tables,
    )
    return [str(p) for p in result.problems]


def exercise_fences(text):
    return parse_slide("p.md", text).exercises


# --- finding fences ----------------------------------------------------------


def test_fences_inside_longer_fences_are_text():
    """A ```exercise shown as an example inside ```` is not an exercise."""
    text = page(
        """
        ````markdown
        ```exercise
        kind: predict
        ```
        ````

        ```exercise
        kind: order
        ```
        """
    )
    fences = exercise_fences(text)
    assert [(f.start, f.end) for f in fences] == [(6, 8)]
    assert fences[0].body == "kind: order"


def test_indented_and_tilde_fences():
    text = "- item\n\n    ~~~~ exercise\n    kind: predict\n    ~~~~\n"
    (fence,) = exercise_fences(text)
    assert fence.indent == "    "
    assert fence.body == "kind: predict"


def test_unclosed_fence_is_reported(fragments):
    found = problems_of("# T\n\n```exercise\nkind: predict\n", fragments)
    assert found == [
        "docs/slides/37-x.md:3: this ```exercise fence is never closed; "
        "expected a closing ``` line after its YAML"
    ]


# --- validation --------------------------------------------------------------


def test_every_problem_of_a_page_is_reported_with_its_line(fragments):
    found = problems_of(
        """
        # Slide

        ```exercise
        kind: check
        question: What is it?
        options:
          - text: "A"
            correct: true
          - text: "B"
            correct: true
          - text: "C"
        explain: typo
        ```

        ```exercise
        kind: multiple-choice
        ```
        """,
        fragments,
    )
    # The misspelt 'explain' is one mistake, reported once at its line.
    assert found == [
        "docs/slides/37-x.md:6: check has 2 options (A, B) marked "
        "'correct: true'; expected exactly one correct option",
        "docs/slides/37-x.md:11: option C is wrong but has no 'tempts'; "
        "expected 'tempts: …' saying why it tempts people",
        "docs/slides/37-x.md:12: check has 'explain' where 'explanation' "
        "is expected; rename it 'explanation' (expected keys: kind, "
        "question, options, explanation (optional: title, id, variants))",
        "docs/slides/37-x.md:16: unknown exercise kind 'multiple-choice'; "
        "expected one of: predict, check, eliminate, buckets, order, "
        "fill-in, discussion",
    ]


def test_an_unknown_key_beside_a_missing_one_is_two_mistakes(fragments):
    """Only a near spelling of the missing key is read as its misspelling:
    an unrelated extra key and a missing key are both reported."""
    found = problems_of(
        """
        # Slide

        ```exercise
        kind: predict
        prompt: p
        answer: a
        colour: red
        ```
        """,
        fragments,
    )
    assert found == [
        "docs/slides/37-x.md:4: predict is missing 'why'; expected keys: "
        "kind, prompt, answer, why (optional: title, id)",
        "docs/slides/37-x.md:7: predict has unknown key 'colour'; expected "
        "keys: kind, prompt, answer, why (optional: title, id)",
    ]


def test_a_wrong_options_misspelt_tempts_is_one_problem(fragments):
    """'tempts' is optional in general but needed on a wrong option: its
    misspelling is one rename, not "no 'tempts'" plus "unknown 'tempt'"."""
    found = problems_of(
        """
        # Slide

        ```exercise
        kind: check
        question: q
        options:
          - text: "A"
            correct: true
          - text: "B"
            tempt: t
        explanation: e
        ```
        """,
        fragments,
    )
    assert found == [
        "docs/slides/37-x.md:10: option B has 'tempt' where 'tempts' is "
        "expected; rename it 'tempts' (expected keys: text (optional: "
        "correct, tempts, id, column, formula))"
    ]


def test_line_numbers_count_the_front_matter(fragments):
    """Problems point at the file's lines, front matter included."""
    source = page(
        """
        ---
        title: x
        ---

        # X

        ```exercise
        kind: predict
        prompt: p
        answer: a
        ```
        """
    )
    found = problems_of(source, fragments)
    assert found == [
        "docs/slides/37-x.md:8: predict is missing 'why'; expected keys: "
        "kind, prompt, answer, why (optional: title, id)"
    ]


CASES = [
    (
        "kind: predict\nprompt: [a, b]\nanswer: x\nwhy: y\n",
        ":2: 'prompt' is a list; expected Markdown text",
    ),
    (
        "kind: predict\nprompt: yes\nanswer: x\nwhy: ''\n",
        ":2: 'prompt' is the YAML boolean true; expected Markdown text "
        '(quote the word as you typed it, as in "yes")',
    ),
    (
        # `{{ value() }}` unquoted is a YAML mapping: quote it, or a block.
        'kind: predict\nprompt: p\nanswer: {{ value("a.b") }}\nwhy: y\n',
        ":3: invalid YAML: a value starting with '{' is a YAML mapping, "
        "not text: unquoted, '{{ value(...) }}' reads as one; write the "
        "value as a block scalar (|, the text on the next lines) or quote "
        "it",
    ),
    (
        "kind: predict\nprompt: p\nanswer: x\nwhy: ''\n",
        ":4: 'why' is empty; expected Markdown text",
    ),
    (
        "kind: predict\nprompt: p\nprompt: q\nanswer: x\nwhy: y\n",
        ":3: key 'prompt' appears twice; expected each key once",
    ),
    (
        "kind: predict\nprompt: p: q: r\n",
        ":2: invalid YAML: mapping values are not allowed in this context; "
        "a ': ' "
        "inside an unquoted value starts a new key; quote the value",
    ),
    (
        # Where a check's answer goes (a contributor wrote "answer: D").
        "kind: check\nquestion: q\nexplanation: e\nanswer: A\noptions:\n"
        "  - text: a\n    correct: true\n  - text: b\n    tempts: t\n",
        ":4: check has unknown key 'answer'; expected keys: kind, question, "
        "options, explanation (optional: title, id, variants); the right "
        "option is marked in its own entry, 'correct: true'",
    ),
    (
        # Its keys are checked once it reads: said (a contributor fixed
        # the quoting, and only then heard of a misspelt key).
        "kind: check\nhnit: h\nquestion: q: r\n",
        ":3: invalid YAML: mapping values are not allowed in this context; "
        "a ': ' inside an unquoted value starts a new key; quote the value "
        "('…') or write it as a block scalar (|); its other checks run "
        "once it reads",
    ),
    (
        # An unclosed quote runs on; YAML stopped three lines below with
        # "did not find expected key", and the hint said to line keys up.
        'kind: predict\nprompt: "p\nanswer: a\nwhy: w\nid: x-y\n',
        ':2: invalid YAML: this line opens a " quote it does not close '
        "(YAML read on and stopped",
    ),
    (
        "- kind: predict\n",
        ":1: the exercise body is not a YAML mapping",
    ),
    (
        "prompt: p\n",
        ":1: exercise has no 'kind'; expected one of: predict, check",
    ),
    (
        "kind: predict\nid: Not A Slug\nprompt: p\nanswer: a\nwhy: w\n",
        ":2: id 'Not A Slug' is not a slug; expected lower-case letters",
    ),
    (
        "kind: check\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n    correct: true\n    tempts: t\n"
        "  - text: b\n    tempts: t\n",
        ":7: option A is the correct one but has 'tempts'; expected "
        "'tempts' only on wrong options",
    ),
    (
        "kind: check\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n    correct: yes please\n  - text: b\n    tempts: t\n",
        ":6: option A has 'correct: yes please'; expected 'correct: true'",
    ),
    (
        "kind: eliminate\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n    correct: true\n  - text: b\n",
        ":7: option B is wrong but has no 'rules_out'; expected "
        "'rules_out: …' saying what rules it out",
    ),
    (
        "kind: eliminate\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n    rules_out: r\n  - text: b\n    rules_out: r\n",
        ":4: eliminate has no option marked 'correct: true'; expected "
        "exactly one survivor",
    ),
    (
        "kind: check\nquestion: q\nexplanation: e\noptions:\n"
        "  - text: a\n    correct: true\n  - text: a\n    tempts: t\n",
        ":7: option B repeats option A; expected different options",
    ),
    (
        "kind: check\nquestion: q\nexplanation: e\noptions: one\n",
        ":4: 'options' of check is not a list; expected a YAML list",
    ),
    (
        "kind: buckets\nprompt: p\nbuckets:\n"
        "  - name: A\n    items: []\n    explanation: e\n"
        "  - name: B\n    items: [x]\n    explanation: e\n",
        ":5: bucket 'A' has no items; expected a list of at least one item",
    ),
    (
        "kind: buckets\nprompt: p\nbuckets:\n"
        "  - name: A\n    items: [x, y]\n    explanation: e\n"
        "  - name: B\n    items: [x]\n    explanation: e\n",
        ":8: item 'x' appears twice (in bucket 'A' and bucket 'B'); expected "
        "each item once",
    ),
    (
        "kind: buckets\nprompt: p\nbuckets:\n"
        "  - name: A\n    items: [x]\n"
        "  - name: A\n    items: [y]\n    explanation: e\n",
        ":4: bucket 1 is missing 'explanation'",
    ),
    (
        "kind: buckets\nprompt: p\nbuckets:\n"
        "  - name: A\n    items: [x]\n    explanation: e\n",
        ":3: 'buckets' of buckets has 1 item(s); expected at least 2",
    ),
    (
        "kind: order\nprompt: p\nwhy: w\nsteps: [a, b, a]\n",
        ":4: step 3 repeats step 1; expected distinct steps",
    ),
    (  # numbered as written: an empty step before them still counts
        'kind: order\nprompt: p\nwhy: w\nsteps: ["", b, b]\n',
        ":4: step 3 repeats step 2; expected distinct steps",
    ),
    (
        FILL.replace("47_variants.forward", "47_variant.forward"),
        ":3: fill-in names unknown table '47_variant.forward' (did you mean "
        "'47_variants.forward'?); expected a table a snippet publishes "
        "(<snippet stem>.<name>): 23_params.by_heads, 24_variants.params, "
        "47_variants.forward, 47_variants.same",
    ),
    (
        FILL.replace("column: attn_w", "column: attn"),
        ":6: cell 1 names unknown column 'attn' (did you mean 'attn_w'?); "
        "expected one of: 'B', 'T', 'd_model', 'h', 'out', 'attn_w'",
    ),
    (
        FILL.replace("(B, h, T, T)", "(B, T, h, T)"),
        ":7: cell 1 (attn_w), variant B=2, T=5, d_model=12, h=3: the "
        "snippet engine computed '(2, 3, 5, 5)', but the formula '(B, T, h, "
        "T)' gives (2, 5, 3, 5); mha_ref or the formula changed",
    ),
    (
        FILL.replace("form: (B, T, T)", "form: (B, h, T, T)"),
        ":9: wrong form '(B, h, T, T)' equals the answer in every variant",
    ),
    (
        FILL.replace("47_variants.forward", "47_variants.same"),
        ":3: the first variant gives B and h the same value, 2: an answer "
        "that swaps them reads right. Give row 1 of the variants table "
        "numbers that differ",
    ),
    (  # "Try another" too: a later variant is held to it
        FILL.replace("47_variants.forward", "47_variants.same"),
        ":3: variant 3 gives B and h the same value, 3: an answer that "
        "swaps them reads right. Give row 3 of the variants table numbers "
        "that differ",
    ),
    (
        FILL.replace("47_variants.forward", "24_variants.params")
        .replace("column: attn_w", "column: params")
        .replace("(B, h, T, T)", "4*d_model^2")
        .replace("(B, T, T)", "d_model^2"),
        ":3: the first variant gives h the value 4, a number the formula "
        "'4*d_model^2' writes: an answer with h in its place reads right. "
        "Give row 1 of the variants table another h",
    ),
    (
        FILL.replace("{T}", "{seq}"),
        ":2: the prompt shows {seq}, which table '47_variants.forward' has "
        "no column for",
    ),
    (
        FILL.replace("    otherwise: one map per head\n", ""),
        ":5: cell 1 is missing 'otherwise'",
    ),
    (
        "kind: discussion\nprompt: p\nanswer: a\n",
        ":1: discussion is missing 'hint'",
    ),
    (
        "kind: [check]\n",
        ":1: unknown exercise kind '['check']' (did you mean 'check'?); "
        "expected one of: predict",
    ),
    (
        FILL.replace("form: (B, T, T)", "form: (B, h, T, T*bias)"),
        ":9: wrong form '(B, h, T, T*bias)' cannot be evaluated in every "
        "variant; expected every symbol it uses to be a column",
    ),
]


@pytest.mark.parametrize(("body", "message"), CASES)
def test_problem_messages(body, message):
    exercise, found = ex.validate(
        body, path="s.md", first_line=0, tables=TABLES
    )
    assert exercise is None
    text = "\n".join(str(p) for p in found)
    assert "s.md" + message in text, text


def test_unavailable_tables_are_a_clear_problem():
    def broken():
        raise ex.TablesUnavailable("cannot import lessonbuild.engine")

    body = FILL.replace("47_variants.forward", "t.x")
    _, found = ex.validate(body, path="s.md", first_line=4, tables=broken)
    assert [str(p) for p in found] == [
        "s.md:7: fill-in needs table 't.x', but the generated tables are "
        "unavailable (cannot import lessonbuild.engine); expected the tables "
        "the snippet engine published (lessonbuild.engine.check)"
    ]


def test_numbers_keep_their_source_text():
    """YAML would read 1_000 or 0.10 as numbers; exercises keep the text."""
    body = "kind: order\nprompt: p\nwhy: w\nsteps: [1_000, 0.10, 2024-01-01]\n"
    exercise, found = ex.validate(body, path="s.md", first_line=0)
    assert not found
    assert isinstance(exercise, Order)
    assert exercise.steps == ["1_000", "0.10", "2024-01-01"]


def test_valid_exercises_become_data():
    body = (
        "kind: check\nquestion: q\nexplanation: e\ntitle: T\nid: my-q\n"
        "options:\n  - text: a\n    correct: true\n"
        "  - text: b\n    tempts: t\n"
    )
    exercise, found = ex.validate(body, path="s.md", first_line=3)
    assert not found
    assert isinstance(exercise, Check)
    assert (exercise.line, exercise.title, exercise.id) == (3, "T", "my-q")
    assert [(o.letter, o.correct, o.note) for o in exercise.options] == [
        ("A", True, None),
        ("B", False, "t"),
    ]
    exercise, found = ex.validate(
        FILL, path="s.md", first_line=0, tables=lambda: TABLES
    )
    assert not found, found
    assert isinstance(exercise, FillIn)
    assert exercise.symbols == ["B", "T", "d_model", "h"]
    assert [c.column for c in exercise.cells] == ["attn_w"]
    assert [r["attn_w"] for r in exercise.rows] == [
        "(2, 3, 5, 5)",
        "(5, 3, 7, 7)",
    ]


# --- rendering ---------------------------------------------------------------


def render_one(markdown, fragments):
    result = render_text(page(markdown), fragments, url="slides/37-x.html")
    assert not result.problems, result.problems
    (token,) = result.html
    assert token in result.text
    return result.html[token], result


def test_markdown_in_every_text_value(fragments):
    """Inline code, emphasis and \\( math \\) render in options, notes,
    items and explanations."""
    html, _ = render_one(
        r"""
        ```exercise
        kind: check
        question: "Is *this* \\(d_k\\)?"
        options:
          - text: "`view` and \\(h\\)"
            correct: true
          - text: "**bold**"
            tempts: "an *emphasis* and `code`"
        explanation: "Because \\(h \\cdot d_k = d\\)."
        ```
        """,
        fragments,
    )
    assert "Is <em>this</em> " in html
    assert '<span class="arithmatex">\\(d_k\\)</span>' in html
    assert (
        '<span class="ex-option__text"><code>view</code> and '
        '<span class="arithmatex">\\(h\\)</span></span>' in html
    )
    assert "<strong>bold</strong>" in html
    assert "an <em>emphasis</em> and <code>code</code>" in html


def test_answers_sit_in_collapsed_details(fragments):
    html, _ = render_one(
        """
        ```exercise
        kind: eliminate
        question: q
        options:
          - text: right one
            correct: true
          - text: wrong one
            rules_out: the reason
        explanation: the why
        ```
        """,
        fragments,
    )
    details = re.search(r"<details.*</details>", html, re.S).group(0)
    assert "<details" in details and " open" not in details
    assert 'data-ex-answer="A"' in details
    text = re.sub(r"<[^>]+>", "", details)  # a letter is in a span
    assert "Survives elimination: A" in text
    assert "What rules out B" in text and "the reason" in text
    assert "the why" in details
    # The question and the options are outside, always visible.
    before = html[: html.index("<details")]
    assert "right one" in before and "wrong one" in before
    assert '<div class="ex-actions" hidden>' in before


def test_storage_key_and_ids(fragments):
    html, _ = render_one(
        "```exercise\nkind: predict\nid: shapes\nprompt: p\nanswer: a\n"
        "why: w\n```\n",
        fragments,
    )
    assert 'data-ex-key="lesson81:slides/37-x.html:shapes"' in html
    assert 'id="ex-shapes"' in html
    html, _ = render_one(
        "```exercise\nkind: predict\nprompt: p\nanswer: a\nwhy: w\n```\n",
        fragments,
    )
    assert 'data-ex-key="lesson81:slides/37-x.html:1"' in html
    # Every kind: the order's view once overwrote the key with its answer.
    html, _ = render_one(
        "```exercise\nkind: order\nid: steps\nprompt: p\nsteps:\n"
        "  - one\n  - two\n  - three\nwhy: w\n```\n",
        fragments,
    )
    assert 'data-ex-key="lesson81:slides/37-x.html:steps"' in html


def test_an_order_is_shuffled_far_from_its_answer(fragments):
    """Four steps or more: none shown in its place and none right after
    the step it follows (slide 33's six were two moves from the answer,
    one of them '4 of 6 in place': a student's study pass), whatever the
    prompt seeds."""
    for prompt in ("p", "q", "order these", "another prompt"):
        for n in (4, 5, 6, 7):
            steps = ", ".join(f"s{i}" for i in range(n))
            html, _ = render_one(
                f"""
                ```exercise
                kind: order
                prompt: {prompt}
                steps: [{steps}]
                why: w
                ```
                """,
                fragments,
            )
            # The shown number of each step, in the right order.
            at = [
                int(k) for k in re.findall(r'<li data-ex-step="(\d)">', html)
            ]
            assert len(at) == n
            assert all(shown != i for i, shown in enumerate(at)), (prompt, at)
            assert all(b != a + 1 for a, b in pairwise(at)), (prompt, at)


def test_order_and_buckets_are_shuffled_stably(fragments):
    source = """
        ```exercise
        kind: order
        prompt: p
        steps: [one, two, three, four]
        why: w
        ```
        """
    first, _ = render_one(source, fragments)
    again, _ = render_one(source, fragments)
    assert first == again
    # Numbered where shown (no clue to the order); the key names them
    # by those numbers in the right order, never the order shown.
    shown = re.findall(r'class="ex-step" data-ex-step="(\d)"', first)
    assert shown == ["0", "1", "2", "3"]
    text = dict(re.findall(r'-step(\d)">(\w+)</span>', first))
    key = re.findall(r'<li data-ex-step="(\d)">(\w+)</li>', first)
    assert [t for _, t in key] == ["one", "two", "three", "four"]
    assert [text[n] for n, _ in key] == ["one", "two", "three", "four"]
    assert [n for n, _ in key] != shown
    html, result = render_one(
        """
        ```exercise
        kind: buckets
        prompt: p
        buckets:
          - name: A
            items: [a1, a2]
            explanation: ea
          - name: "`B`"
            items: [b1]
            explanation: eb
        ```
        """,
        fragments,
    )
    assert isinstance(result.exercises[0], Buckets)
    assert '<option value="1">B</option>' in html  # plain text in <option>
    assert re.findall(r'data-ex-bucket="(\d)"', html) == ["0", "1"]


def test_fill_in_prints_no_answer_and_shows_the_first_variant(fragments):
    """The variant's numbers are in the prompt; its answers are data for
    the script, never text on the page (not even in the key)."""
    result = render_text(f"```exercise\n{FILL}```\n", fragments)
    assert not result.problems, result.problems
    (html,) = result.html.values()
    text = re.sub(
        r"data-ex-spec='.*?'|<template.*?</template>", "", html, flags=re.S
    )
    assert "(2, 3, 5, 5)" not in text and "(5, 3, 7, 7)" not in text
    assert re.search(r'data-ex-var="B">2<', text)
    assert "<code>(B, h, T, T)</code>" in text  # the key: the formula
    spec = json.loads(re.search(r"data-ex-spec='(.*?)'", html)[1])
    assert spec["cells"][0]["answer"] == [[2, 3, 5, 5], [5, 3, 7, 7]]
    assert '<template data-ex-why="0-0">' in html


def test_placeholders_survive_markdown_and_are_filled(fragments):
    """The placeholder paragraph comes through Markdown, even indented
    inside a list, and is swapped for the widget."""
    import markdown as md

    text = page(
        """
        1. First

            ```exercise
            kind: predict
            prompt: p
            answer: a
            why: w
            ```

        2. Second
        """
    )
    result = render_text(text, fragments)
    assert not result.problems
    out = md.markdown(result.text, extensions=["pymdownx.superfences"])
    filled, missing = ex.fill_placeholders(out, result.html)
    assert not missing
    assert "xexercisex" not in filled
    assert filled.count('<section class="exercise ex-predict"') == 1
    assert "<p><section" not in filled


SHAPES = {
    "15_trace.shapes": {
        "columns": ["tensor", "shape", "note"],
        "rows": [
            ["X (input)", "(1, 4, 8)", "in"],
            ["attn_weights", "(1, 2, 4, 4)", "per head"],
            ["output", "(1, 4, 8)", "out"],
        ],
    }
}
BUCKETS_FROM_TABLE = """\
kind: buckets
table: 15_trace.shapes
group_by: shape
item_column: tensor
prompt: p
buckets:
  - name: "`(1, 4, 8)`"
    items: [X (input), output]
    explanation: e
  - name: "`(1, 2, 4, 4)`"
    items: [{item}]
    explanation: e
"""


def test_buckets_that_match_their_table_pass():
    """Buckets naming a table pass while they equal its grouping."""
    body = BUCKETS_FROM_TABLE.format(item="attn_weights")
    exercise, found = ex.validate(
        body, path="s.md", first_line=0, tables=SHAPES
    )
    assert found == []
    assert [b.name for b in exercise.buckets] == [
        "`(1, 4, 8)`",
        "`(1, 2, 4, 4)`",
    ]


def test_buckets_that_drift_from_their_table_fail_with_the_grouping():
    """A bucket that no longer matches the table fails, saying the truth."""
    body = BUCKETS_FROM_TABLE.format(item="context")
    exercise, found = ex.validate(
        body, path="s.md", first_line=0, tables=SHAPES
    )
    assert exercise is None
    assert [str(p) for p in found] == [
        "s.md:2: the buckets no longer match table '15_trace.shapes' "
        "grouped by 'shape'; expected these names and items (paste them "
        "over the buckets' own, keeping each explanation):\n"
        "    buckets:\n"
        '      - name: "`(1, 4, 8)`"\n'
        '        items: ["X (input)", "output"]\n'
        '      - name: "`(1, 2, 4, 4)`"\n'
        '        items: ["attn_weights"]'
    ]
    # Pasted over the buckets, with each explanation kept, it passes.
    pasted = []
    for line in found[0].detail.splitlines():
        pasted.append(line)
        if line.lstrip().startswith("items:"):
            pasted.append("    explanation: e")
    fixed = body.split("buckets:\n")[0] + "\n".join(pasted) + "\n"
    _, after = ex.validate(fixed, path="s.md", first_line=0, tables=SHAPES)
    assert after == []


def test_a_drifted_bucket_is_given_its_published_name_by_reference():
    """A contributor pasted the suggested names, typed out; the build
    then refused each as a published value typed by hand, naming the
    reference to use: a second round trip. A name a snippet publishes
    is suggested as its ``{{ value(id) }}``, and that paste passes."""
    values = {"15_trace.output": "(1, 4, 8)", "15_trace.d_k": "4"}
    body = BUCKETS_FROM_TABLE.format(item="context")
    _, found = ex.validate(
        body, path="s.md", first_line=0, tables=SHAPES, values=values
    )
    [problem] = found
    assert "- name: \"`{{ value('15_trace.output') }}`\"" in problem.detail
    assert '- name: "`(1, 2, 4, 4)`"' in problem.detail  # not published
    pasted = []
    for line in problem.detail.splitlines():
        pasted.append(line)
        if line.lstrip().startswith("items:"):
            pasted.append("    explanation: e")
    fixed = body.split("buckets:\n")[0] + "\n".join(pasted) + "\n"
    _, after = ex.validate(
        expand_values(fixed, values),
        path="s.md",
        first_line=0,
        tables=SHAPES,
        values=values,
    )
    assert after == []


def test_buckets_from_a_table_need_all_three_keys():
    """'table' without 'group_by'/'item_column' is reported, not ignored."""
    body = BUCKETS_FROM_TABLE.replace("group_by: shape\n", "").format(
        item="attn_weights"
    )
    _, found = ex.validate(body, path="s.md", first_line=0, tables=SHAPES)
    assert [str(p) for p in found] == [
        "s.md:2: buckets from a table need all of 'table', 'group_by' and "
        "'item_column'; missing 'group_by'"
    ]


# --- answers spread over positions, no exercise answering another ------------


def choice(letter_of_correct: str, texts=("a", "b", "c", "d"), kind="check"):
    note = "tempts" if kind == "check" else "rules_out"
    lines = [f"kind: {kind}", "question: q", "explanation: e", "options:"]
    for i, text in enumerate(texts):
        lines.append(f"  - text: '{text}'")
        if chr(ord("A") + i) == letter_of_correct:
            lines.append("    correct: true")
        else:
            lines.append(f"    {note}: why")
    exercise, found = ex.validate(
        "\n".join(lines) + "\n", path="s.md", first_line=0
    )
    assert not found, found
    return exercise


def test_spread_refuses_most_answers_in_one_position():
    found = [
        (f"s{i}.md", choice(letter, texts=(f"{i}a", f"{i}b", f"{i}c")))
        for i, letter in enumerate("AABA")
    ]
    (problem,) = ex.check_spread(found)
    assert "3 of the 4 check/eliminate exercises have their correct " in str(
        problem
    )
    assert "at A (s0.md:0, s1.md:0, s3.md:0)" in str(problem)
    spread = [
        (f"s{i}.md", choice(letter, texts=(f"{i}a", f"{i}b", f"{i}c")))
        for i, letter in enumerate("ABCA")
    ]
    assert ex.check_spread(spread) == []


def test_spread_refuses_two_exercises_with_the_same_options():
    """An elimination and the check after it must not share options,
    whatever their order."""
    first = choice("A", kind="eliminate")
    second = choice("C", texts=("c", "d", "a", "b"))
    (problem,) = ex.check_spread([("e.md", first), ("c.md", second)])
    assert str(problem).startswith(
        "c.md:0: this check offers the same options as the eliminate at e.md:0"
    )


#: Free text a student types, as the widgets judge it (exercises.js):
#: no attempt (True) or an attempt, however short (False).
FREE_TEXT = {
    # No try: each opened an answer in a student's rehearsal.
    "idk": True, "No idea": True, "asdf": True, "x y": True, "aa bb": True,
    "the the the the": True, "idk idk idk idk": True, "dunno really": True,
    "I do not know this one.": True, "I don\u2019t know": True,
    "no clue at all honestly": True, "not sure at all": True,
    # Placeholder words, and words that commit to nothing (a third
    # student's rehearsal).
    "foo bar baz": True, "lorem ipsum dolor": True, "maybe": True,
    "hmm ok": True, "this is hard": True, "todo fill later": True,
    "your answer here": True, "tbd": True,
    # Short answers: a yes or no in words, a shape, a name, other scripts
    # (a reviewer found "it does not", "(B, h, T, T)" and "d_k" refused).
    "no": False, "yes": False, "it does not": False, "it is": False,
    "sure": False, "(B, h, T, T)": False, "d_k": False, "softmax": False,
    "x.view(B, T, h, d_k)": False, "(1, 4, 8)": False,
    "not sure but maybe scaling": False, "没有掩码的时候会怎样": False,
    # Shapes in the lesson's symbols, as a student writes them (a fresh
    # student's rehearsal: each was told to say what it expects).
    "B×h×T×T": False, "B x h x T x T": False, "B h T T": False,
    "B,h,T,T": False, "B*h*T*T": False, "h*T*T": False, "b×h×t×t": False,
    "T_q × T_k": False, "a b": True, "x x": True,
    # A don't-know in more words (a fresh-eyes student, stop 71).
    "I have absolutely no idea": True, "I have no idea at all": True,
    "I have an idea: the heads split it": False,
}  # fmt: skip


#: A prediction's question (slide 14's, as a page's text holds it) and
#: texts typed against it: the question pasted back (True) or an answer
#: (False), however many of its numbers and symbols it reuses (a fresh
#: check found right answers refused as the question's words).
QUESTION = (
    "A batch of B=1 sequence of T=4 tokens, d_model=8 features each, goes "
    "through nn.MultiheadAttention(embed_dim=8, num_heads=2, bias=False, "
    "batch_first=True) (so h=2, d_k=4). Commit before you compute: what "
    "shapes do the output and the per-head attention weights "
    "(average_attn_weights=False) come out to? Write each as a tuple and "
    "name every axis."
)
ECHOES = {
    QUESTION: True,
    QUESTION.split(". ", 1)[1]: True,
    "output (1, 4, 8), attention weights (1, 2, 4, 4)": False,
    "(1, 4, 8) and (1, 2, 4, 4)": False,
    "output 1 4 8 weights 1 2 4 4": False,
    "B=1, T=4, d_model=8 so (1, 4, 8); h=2 heads of (4, 4)": False,
}


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the JS")
def test_free_text_tells_a_try_from_no_try():
    """The widgets' own functions, run by node on FREE_TEXT; and Chinese,
    written without spaces, counts as many words as it holds (a
    discussion answer needs three)."""
    source = (ROOT / "docs/assets/exercises.js").read_text()
    start = source.index("  function words(text, echo)")
    end = source.index("  function sameText(a, b)")
    script = (
        "const f = new Function(process.argv[1] + "
        "'; return {nonAnswer, words};')();\n"
        "const texts = JSON.parse(process.argv[2]);\n"
        "const [q, answers] = JSON.parse(process.argv[3]);\n"
        "console.log(JSON.stringify([texts.map(f.nonAnswer), "
        "f.words('没有掩码的时候会怎样'), "
        "answers.map((a) => f.words(a, [q]))]));"
    )
    result = subprocess.run(
        [
            "node",
            "-e",
            script,
            source[start:end],
            json.dumps(list(FREE_TEXT)),
            json.dumps([QUESTION, list(ECHOES)]),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        check=True,
    )
    judged, chinese_words, echoed = json.loads(result.stdout)
    assert dict(zip(FREE_TEXT, judged, strict=True)) == FREE_TEXT
    assert chinese_words >= 3
    said = {
        answer: count == 0
        for answer, count in zip(ECHOES, echoed, strict=True)
    }
    assert said == ECHOES
