"""Check and eliminate exercises with variants: the numbers of the
question, options, tempts (rules_out) and explanation come from a table a
snippet published, one row per variant, and each option's number must
equal its formula in every one.

Unit cases on a small table (each problem at its file and line, the page
showing the first variant and no answer); then the lesson's own: every
variant of slides 36, 37 and 39 with the engine's value, checked here by
plain Python arithmetic, and a drift in the engine stopping the build at
the option's formula line.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

import lessonbuild.exercises as ex
from lessonbuild import engine
from lessonbuild.deck import read_deck
from lessonbuild.exercises.model import Check, Eliminate
from lessonbuild.settings import read_settings
from tests.test_exercises_variants import numbers, plain

ROOT = Path(__file__).resolve().parents[1]

TABLES = {
    "39_variants.shapes": {
        "columns": ["B", "T", "d_model", "h", "queries", "weights"],
        "rows": [
            ["2", "5", "8", "2", "(2, 2, 5, 4)", "(2, 2, 5, 5)"],
            ["3", "7", "12", "3", "(3, 3, 7, 4)", "(3, 3, 7, 7)"],
        ],
    },
}
#: A check over TABLES' variants: option A's formula on line 9, B's on 15.
CHECK = """\
kind: check
question: |
  B = {B}, T = {T}, d_model = {d_model}, h = {h}. The weights' shape?
variants: 39_variants.shapes
options:
  - id: d-k-last
    text: "{queries}"
    column: queries
    formula: (B, h, T, d_k)
    tempts: |
      {queries} puts d_k where the keys go.
  - id: per-head
    text: "{weights}"
    column: weights
    formula: (B, h, T, T)
    correct: true
explanation: |
  (B, h, T, T) = {weights}.
"""


def problems(body: str, tables=TABLES) -> list[str]:
    exercise, found = ex.validate(
        body, path="s.md", first_line=0, tables=tables
    )
    assert (exercise is None) == bool(found)
    return [str(p) for p in found]


def test_a_valid_check_with_variants_becomes_data():
    exercise, found = ex.validate(
        CHECK, path="s.md", first_line=0, tables=TABLES
    )
    assert not found, found
    assert isinstance(exercise, Check)
    assert exercise.variants == "39_variants.shapes"
    assert [r["weights"] for r in exercise.rows] == [
        "(2, 2, 5, 5)",
        "(3, 3, 7, 7)",
    ]
    assert [(o.column, o.formula) for o in exercise.options] == [
        ("queries", "(B, h, T, d_k)"),
        ("weights", "(B, h, T, T)"),
    ]


PROBLEMS = [
    (
        CHECK.replace("B = {B}", "B = {batch}"),
        [
            "s.md:2: the question shows {batch}, which table "
            "'39_variants.shapes' has no column for; expected one of: {B}, "
        ],
    ),
    (
        CHECK.replace("{queries} puts", "{query} puts"),
        [
            "s.md:10: option A 'tempts' shows {query}, which table "
            "'39_variants.shapes' has no column for (did you mean 'queries'?)"
        ],
    ),
    (
        CHECK.replace("= {weights}.", "= {weight}."),
        ["s.md:17: the explanation shows {weight}"],
    ),
    (
        CHECK.replace('text: "{weights}"', 'text: "{weight}"'),
        ["s.md:13: option B text shows {weight}"],
    ),
    (
        CHECK.replace("column: weights", "column: weight"),
        [
            "s.md:14: option B names unknown column 'weight' (did you mean "
            "'weights'?)"
        ],
    ),
    (
        CHECK.replace(
            "(B, h, T, T)\n    correct", "(B, T, h, T)\n    correct"
        ),
        [
            "s.md:15: option B (weights), variant B=2, T=5, d_model=8, h=2: "
            "the snippet engine computed '(2, 2, 5, 5)', but the formula "
            "'(B, T, h, T)' gives (2, 5, 2, 5); mha_ref or the formula "
            "changed",
            "s.md:15: option B (weights), variant B=3, T=7, d_model=12, h=3:",
        ],
    ),
    (
        CHECK.replace('text: "{queries}"', 'text: "the queries"'),
        [
            "s.md:7: option A takes its number from column 'queries' but its "
            "text does not show {queries}"
        ],
    ),
    (
        CHECK.replace("    column: queries\n", ""),
        ["s.md:8: option A has 'formula' but no 'column'; expected both"],
    ),
    (
        CHECK.replace("variants: 39_variants.shapes\n", ""),
        [
            "s.md:2: the question shows {B}, but the exercise has no "
            "'variants' table to fill it from",
            "s.md:7: option A has 'column' but the exercise has no 'variants' "
            "table",
        ],
    ),
    (
        CHECK.replace("T = {T},", "\\(T = {T}\\),"),
        [
            "s.md:2: the question puts {T} inside math ('\\\\(T = {T}\\\\)'); "
            "expected it outside the math"
        ],
    ),
]


def test_fewer_than_two_variants_is_a_problem():
    one_row = copy.deepcopy(TABLES)
    del one_row["39_variants.shapes"]["rows"][1]
    assert problems(CHECK, one_row) == [
        "s.md:4: table '39_variants.shapes' has 1 row(s); expected at least "
        'two variants, so "Try another" has another to draw'
    ]


def test_two_options_that_coincide_in_a_variant_are_ambiguous():
    """T = d_k in the second variant: (B, h, T, d_k) is (B, h, T, T)."""
    tied = copy.deepcopy(TABLES)
    tied["39_variants.shapes"]["rows"][1] = [
        "3", "4", "12", "3", "(3, 3, 4, 4)", "(3, 3, 4, 4)",
    ]  # fmt: skip
    assert problems(CHECK, tied) == [
        "s.md:13: in the variant B=3, T=4, d_model=12, h=3 option B comes "
        "to the same as option A ('(3, 3, 4, 4)'), so the question has two "
        "answers there; expected variant values where no two options "
        "coincide (change that row of the snippet)"
    ]


def test_options_with_equal_numbers_but_other_words_are_ambiguous():
    """Texts that differ in words are still one number twice: with h = 1,
    4 d_model^2 / h is 4 d_model^2."""
    tables = {
        "t.counts": {
            "columns": ["d_model", "h", "a", "b"],
            "rows": [["8", "2", "256", "128"], ["8", "1", "256", "256"]],
        }
    }
    body = (
        "kind: check\nquestion: d = {d_model}, h = {h}\nvariants: t.counts\n"
        "options:\n"
        "  - text: '{a} in all'\n    column: a\n    formula: 4*d_model^2\n"
        "    correct: true\n"
        "  - text: '{b} for W_O'\n    column: b\n    formula: 4*d_model^2/h\n"
        "    tempts: t\n"
        "explanation: e\n"
    )
    found = problems(body, tables)
    assert found == [
        "s.md:9: in the variant d_model=8, h=1 option B comes to the same "
        "as option A ('256 for W_O'), so the question has two answers "
        "there; expected variant values where no two options coincide "
        "(change that row of the snippet)"
    ]


COUNTS = {
    "36_variants.counts": {
        "columns": ["d_model", "h", "total", "w_o", "four_slices"],
        "rows": [
            ["8", "2", "256", "64", "128"],
            ["12", "3", "576", "144", "192"],
        ],
    },
}
#: An eliminate over COUNTS: A's formula on line 9, B's on 15, C's on 21.
ELIMINATE = """\
kind: eliminate
question: |
  d_model = {d_model}, h = {h}. How many parameters?
variants: 36_variants.counts
options:
  - id: divide-by-h
    text: "{four_slices} = 4 · {d_model}² / {h}"
    column: four_slices
    formula: 4*d_model^2/h
    rules_out: |
      The {h} slices make one full matrix, not 1/{h} of one.
  - id: w-o-only
    text: "{w_o}, for W_O only"
    column: w_o
    formula: d_model^2
    rules_out: |
      One matrix of four; each adds {w_o}.
  - id: four-squared
    text: "{total} = 4 · {d_model}²"
    column: total
    formula: 4*d_model^2
    correct: true
explanation: |
  4 d_model^2 = {total}.
"""


def test_a_valid_eliminate_with_variants_becomes_data():
    exercise, found = ex.validate(
        ELIMINATE, path="s.md", first_line=0, tables=COUNTS
    )
    assert not found, found
    assert isinstance(exercise, Eliminate)
    assert exercise.variants == "36_variants.counts"
    assert [r["total"] for r in exercise.rows] == ["256", "576"]
    assert [o.line for o in exercise.options] == [9, 15, 21]


ELIMINATE_PROBLEMS = [
    (
        ELIMINATE.replace("not 1/{h} of", "not 1/{heads} of"),
        [
            "s.md:10: option A 'rules_out' shows {heads}, which table "
            "'36_variants.counts' has no column for"
        ],
    ),
    (
        ELIMINATE.replace("formula: d_model^2\n", "formula: d_model^2/2\n"),
        [
            "s.md:15: option B (w_o), variant d_model=8, h=2: the snippet "
            "engine computed '64', but the formula 'd_model^2/2' gives 32; "
            "mha_ref or the formula changed",
            "s.md:15: option B (w_o), variant d_model=12, h=3:",
        ],
    ),
    (
        ELIMINATE.replace("= {total}.", "= \\({total}\\)."),
        ["s.md:23: the explanation puts {total} inside math"],
    ),
    (
        ELIMINATE.replace("    column: total\n", ""),
        ["s.md:20: option C has 'formula' but no 'column'; expected both"],
    ),
    (
        ELIMINATE.replace("variants: 36_variants.counts\n", ""),
        [
            "s.md:2: the question shows {d_model}, but the exercise has no "
            "'variants' table to fill it from",
            "s.md:7: option A has 'column' but the exercise has no "
            "'variants' table",
        ],
    ),
]


@pytest.mark.parametrize(
    ("body", "tables", "expected"),
    [(body, TABLES, expected) for body, expected in PROBLEMS]
    + [(body, COUNTS, expected) for body, expected in ELIMINATE_PROBLEMS],
)
def test_each_problem_is_reported_at_its_line(body, tables, expected):
    """Check and eliminate exercises with variants, each mistake alone."""
    found = "\n".join(problems(body, tables))
    for message in expected:
        assert message in found, found


def test_mistakes_in_one_exercise_are_reported_together():
    """Two options marked correct and a formula that disagrees with the
    engine: both in one build (the formula's came only once the rest was
    fixed: a contributor's three mistakes took three builds)."""
    body = CHECK.replace(
        "formula: (B, h, T, d_k)\n",
        "formula: (B, h, T, d_k)\n    correct: true\n",
    ).replace("(B, h, T, T)\n    correct", "(B, T, h, T)\n    correct")
    found = "\n".join(problems(body, TABLES))
    assert "2 options (A, B) marked 'correct: true'" in found, found
    assert "s.md:16: option B (weights), variant B=2, T=5" in found, found


def test_an_eliminate_with_two_survivors_in_a_variant_is_a_problem():
    """h = 4: 4 d_model^2 / h is d_model^2, so A and B are one number and
    striking three leaves a wrong one or two right ones."""
    tied = copy.deepcopy(COUNTS)
    tied["36_variants.counts"]["rows"][1] = ["12", "4", "576", "144", "144"]
    assert problems(ELIMINATE, tied) == [
        "s.md:13: in the variant d_model=12, h=4 option B comes to the same "
        "as option A ('144, for W_O only'), so the question has two "
        "answers there; expected variant values where no two options "
        "coincide (change that row of the snippet)"
    ]


@pytest.fixture(scope="module")
def fragments():
    return ex.Fragments(["pymdownx.arithmatex"], {})


def rendered(body: str, fragments, tables=TABLES) -> str:
    ctx = ex.RenderContext(1, "k", fragments.block, fragments.inline)
    exercise, found = ex.validate(
        body, path="s.md", first_line=0, tables=tables
    )
    assert not found, found
    return ex.render(exercise, ctx)


def test_the_page_shows_the_first_variant_and_no_answer(fragments):
    html = rendered(CHECK, fragments)
    for name, value in (("B", "2"), ("T", "5"), ("weights", "(2, 2, 5, 5)")):
        assert f'data-ex-var="{name}">{value}</span>' in html
    spec = json.loads(
        re.search(r"data-ex-spec='(.*?)'", html)[1]
    )  # fmt: skip
    # Every variant's values, and nothing that says which option is right.
    assert spec == {"vars": [
        dict(zip(TABLES["39_variants.shapes"]["columns"], row, strict=True))
        for row in TABLES["39_variants.shapes"]["rows"]
    ]}  # fmt: skip
    assert "correct" not in html.replace("ex-key", "")
    # The right letter is in the collapsed key only, as for any check.
    before_key = html[: html.index('<details class="success ex-key"')]
    assert "data-ex-answer" not in before_key
    assert 'data-ex-action="another"' in html


def test_the_eliminate_page_shows_the_first_variant_and_no_survivor(
    fragments,
):
    html = rendered(ELIMINATE, fragments, COUNTS)
    for name, value in (("d_model", "8"), ("h", "2"), ("total", "256")):
        assert f'data-ex-var="{name}">{value}</span>' in html
    spec = json.loads(
        re.search(r"data-ex-spec='(.*?)'", html)[1]
    )  # fmt: skip
    assert spec == {"vars": [
        dict(zip(COUNTS["36_variants.counts"]["columns"], row, strict=True))
        for row in COUNTS["36_variants.counts"]["rows"]
    ]}  # fmt: skip
    before_key = html[: html.index('<details class="success ex-key"')]
    assert "data-ex-answer" not in before_key
    assert "correct" not in html.replace("ex-key", "")
    assert 'data-ex-action="another"' in html


def test_an_eliminate_without_variants_has_no_try_another(fragments):
    body = (
        "kind: eliminate\nquestion: q\noptions:\n  - text: a\n"
        "    correct: true\n  - text: b\n    rules_out: r\n"
        "  - text: c\n    rules_out: r\nexplanation: e\n"
    )
    html = rendered(body, fragments)
    assert 'data-ex-action="another"' not in html
    assert "ex-spec" not in html and "ex-var" not in html


def test_a_check_without_variants_has_no_try_another(fragments):
    body = (
        "kind: check\nquestion: q\noptions:\n  - text: a\n    correct: true\n"
        "  - text: b\n    tempts: t\nexplanation: e\n"
    )
    html = rendered(body, fragments)
    assert 'data-ex-action="another"' not in html
    assert "ex-spec" not in html and "ex-var" not in html


# --- the lesson's own checks, with the tables the engine published -------

SLIDES = {
    "param-count-256": (
        "docs/slides/36-rule-out-three-check-yourself-parameter.md"
    ),
    "param-count-512": "docs/slides/37-check-yourself-parameter-count.md",
    "attn-shape": "docs/slides/39-check-yourself-attention-weight-shape.md",
}


@pytest.fixture(scope="module")
def lesson():
    """The engine's tables (through its cache, as the build gets them)
    and every check and eliminate of the deck, validated with them."""
    deck = read_deck(ROOT, parts=read_settings(ROOT).parts)
    result = engine.check(
        deck, timeout=300, jobs=2, cache_dir=ROOT / ".cache" / "engine"
    )
    assert not result.problems, result.problems
    found = []
    for slide in deck.slides:
        for fence in slide.exercises:
            if not re.search(
                r"^kind: (check|eliminate)\s*$", fence.body, re.M
            ):
                continue
            exercise, problems = ex.validate(
                fence.body,
                path=slide.path,
                first_line=fence.line,
                tables=result.tables,
            )
            assert not problems, problems
            found.append((slide, fence, exercise))
    return result.tables, found


def test_every_variant_of_36_37_and_39_with_the_engine_value(lesson):
    """Each option's number, per variant, as the engine computed it from
    mha_ref, equals its formula by Python's own arithmetic."""
    _, found = lesson
    checks = {e.id: (s, e) for s, _, e in found if e.id in SLIDES}
    assert set(checks) == set(SLIDES)
    listing = []
    for exercise_id, (slide, exercise) in checks.items():
        assert slide.path == SLIDES[exercise_id]
        assert len(exercise.rows) >= 4, f"{slide.path}: too few variants"
        with_numbers = [o for o in exercise.options if o.column]
        assert len(with_numbers) == len(exercise.options) == 4
        for o in with_numbers:
            for row in exercise.rows:
                given = ", ".join(
                    f"{k}={v}" for k, v in row.items() if v.isdigit()
                )
                listing.append(
                    f"{slide.path}:{o.line} {exercise_id} {o.id} "
                    f"[{given}] {o.formula} = {row[o.column]}"
                )
                assert numbers(row[o.column]) == plain(o.formula, row), (
                    listing[-1]
                )
        # The correct option is still the one marked, by id.
        right = [o.id for o in exercise.options if o.correct]
        assert right == [
            {
                "param-count-256": "four-squared",
                "param-count-512": "four-squared",
                "attn-shape": "per-head",
            }[exercise_id]
        ]
    print("\n".join(listing))
    assert len(listing) >= len(SLIDES) * 4 * 4


def test_a_drift_in_the_engine_fails_at_the_option(lesson):
    """mha_ref changes one variant's number: the build (this validation,
    with the engine's tables) names the slide and the option's line."""
    tables, found = lesson
    for slide, fence, exercise in found:
        if exercise.id not in SLIDES:
            continue
        option = next(o for o in exercise.options if o.correct)
        drifted = copy.deepcopy(tables)
        table = drifted[exercise.variants]
        i = table["columns"].index(option.column)
        cell = table["rows"][1][i]
        table["rows"][1][i] = (
            cell[:-2] + ("9" if cell[-2] != "9" else "8") + cell[-1]
        )
        _, problems = ex.validate(
            fence.body, path=slide.path, first_line=fence.line, tables=drifted
        )
        assert [(p.path, p.line) for p in problems] == [
            (slide.path, option.line)
        ], problems
        assert "the snippet engine computed" in problems[0].message
        assert "mha_ref or the formula changed" in problems[0].message


def test_the_decks_answers_are_earned(lesson):
    """Every check/eliminate of the deck: no position holds more than half
    the correct options, and no two exercises offer the same options."""
    _, found = lesson
    assert len(found) >= ex.spread.MIN_FOR_SPREAD
    problems = ex.check_spread([(s.path, e) for s, _, e in found])
    assert not problems, "\n".join(str(p) for p in problems)
