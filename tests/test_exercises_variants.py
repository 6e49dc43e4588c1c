"""Fill-ins whose every answer the snippet engine computed.

Every variant of every fill-in is listed with the value the engine
computed from mha_ref (and checked against its formula, evaluated here
with plain Python arithmetic, not the build's sympy); a drift in the
engine's values stops the build at the exercise's cell; each fill-in is
fed the equivalent forms of its answers and its wrong forms; and the
judging rules (the browser's, written again here in Python) agree on the
shared cases of tests/exercise_fixtures/answer_cases.json (the browser
runs them too).
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
from lessonbuild.engine.prose import expand_values
from lessonbuild.exercises import answers
from lessonbuild.exercises.model import FillIn
from lessonbuild.exercises.render import fill_in_view
from lessonbuild.settings import read_settings

ROOT = Path(__file__).resolve().parents[1]
CASES = json.loads(
    (ROOT / "tests" / "exercise_fixtures" / "answer_cases.json").read_text()
)


@pytest.fixture(scope="module")
def lesson():
    """The deck, the tables its snippets published (through the engine's
    cache, as the build gets them) and every fill-in, validated."""
    deck = read_deck(ROOT, parts=read_settings(ROOT).parts)
    result = engine.check(
        deck, timeout=300, jobs=2, cache_dir=ROOT / ".cache" / "engine"
    )
    assert not result.problems, result.problems
    fill_ins = []
    for slide in deck.slides:
        for fence in slide.exercises:
            exercise, problems = ex.validate(
                # As the build does: published values in first.
                expand_values(fence.body, result.values),
                path=slide.path,
                first_line=fence.line,
                tables=result.tables,
            )
            assert not problems, problems
            if isinstance(exercise, FillIn):
                fill_ins.append((slide, fence, exercise))
    return result.tables, fill_ins


def plain(formula: str, row: dict[str, str]) -> list[int]:
    """A formula's axes for one variant by Python's own arithmetic: the
    symbols bound to the row's numbers, d_k = d_model // h."""
    scope = {k.lower(): int(v) for k, v in row.items() if v.isdigit()}
    if "d_model" in scope and "h" in scope:
        scope.setdefault("d_k", scope["d_model"] // scope["h"])
    value = eval(  # noqa: S307 - the lesson's own formulas, no builtins
        formula.replace("^", "**").lower(), {"__builtins__": {}}, scope
    )
    return list(value) if isinstance(value, tuple) else [value]


def numbers(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", text)]


def test_every_variant_with_the_value_the_engine_computed(lesson):
    _, fill_ins = lesson
    listing = []
    for slide, _, exercise in fill_ins:
        assert len(exercise.rows) >= 3, f"{slide.path}: too few variants"
        for cell in exercise.cells:
            for row in exercise.rows:
                given = ", ".join(f"{s}={row[s]}" for s in exercise.symbols)
                listing.append(
                    f"{slide.path}:{cell.line} {exercise.id} "
                    f"{cell.column} [{given}] = {row[cell.column]}"
                )
                assert numbers(row[cell.column]) == plain(cell.formula, row), (
                    listing[-1]
                )
    print("\n".join(listing))
    assert len(fill_ins) >= 6
    assert len(listing) >= 6 * 3


def test_a_drift_in_the_engine_fails_at_the_cell(lesson):
    """mha_ref changes one variant's value: the build (this validation,
    with the engine's tables) names the slide and the cell's line."""
    tables, fill_ins = lesson
    slide, fence, exercise = fill_ins[0]
    cell = exercise.cells[0]
    drifted = copy.deepcopy(tables)
    table = drifted[exercise.variants]
    row = table["rows"][1]
    i = table["columns"].index(cell.column)
    row[i] = row[i].replace(row[i][-2], "9" if row[i][-2] != "9" else "8")
    _, problems = ex.validate(
        fence.body, path=slide.path, first_line=fence.line, tables=drifted
    )
    assert [(p.path, p.line) for p in problems] == [(slide.path, cell.line)]
    assert "the snippet engine computed" in problems[0].message
    assert "mha_ref or the formula changed" in problems[0].message


def right_forms(text: str, shape: bool) -> list[str]:
    """The engine's answer written the ways the lesson and PyTorch do."""
    vals = numbers(text)
    if shape:
        inner = ", ".join(map(str, vals))
        return [
            f"({inner})",
            f"[{inner}]",
            f"torch.Size([{inner}])",
            " × ".join(map(str, vals)),
            inner.replace(" ", ""),
        ]
    (v,) = vals
    return [f"{v:,}", str(v), f"{v:_}", f"{v:e}", f"{v} = {v}"]


# --- the browser's judge, in Python (docs/assets/judge.js) -------------------

#: A rounded number (``1M``: its ``M`` is a unit, not a symbol), a name,
#: and a number as Python and mathjs read it (``1.048576e6`` is no name).
ROUNDED = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmg])$")
NAME = re.compile(r"[a-z_][a-z0-9_]*")
NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?")


def uses_symbols(parts: list[str]) -> bool:
    return any(
        not ROUNDED.match(p) and NAME.search(NUMBER.sub(" ", p)) for p in parts
    )


def matches(value, target: float) -> bool:
    """Does a part's value (from ``answers.values``) equal ``target``? A
    rounded number does when the value rounds to it (or is exactly 2^20
    for ``1M``)."""
    if value is None:
        return False
    if isinstance(value, tuple):
        decimal, tolerance, binary = value
        return abs(decimal - target) <= tolerance or answers.close(
            binary, target
        )
    return answers.close(value, target)


def same_as(parts, scope, points, at_variant, at_points) -> bool:
    mine = [answers.values(p, scope) for p in parts]
    if len(mine) != len(at_variant):
        return False
    if not all(matches(v, t) for v, t in zip(mine, at_variant, strict=True)):
        return False
    # Each part that uses symbols, at the random points too; a part in
    # numbers answers for these numbers only. At other values of the
    # symbols, a chain's plain numbers ("4 d_model^2 = 1,048,576") no
    # longer apply: its symbolic sides do.
    return all(
        matches(answers.values(symbolic_sides(p), point), target)
        for point, targets in zip(points, at_points, strict=True)
        for p, target in zip(parts, targets, strict=False)
        if uses_symbols([p])
    )


def symbolic_sides(part: str) -> str:
    sides = [x for x in part.split("=") if uses_symbols([x.strip()])]
    return "=".join(sides) if sides else part


def judge(text: str, cell: dict, v: int, spec: dict) -> dict:
    """The verdict on one typed answer, as the browser gives it:
    ``{"ok": True}``, or ``{"ok": False, "wrong": k}`` (the author's
    wrong form k matched; -1: none did). ``cell`` and ``spec`` are the
    fill-in's spec (render.fill_in_view), ``v`` the variant shown."""
    parts = answers.split(text, cell["shape"])
    if not parts:
        return {"ok": False, "wrong": -1}
    scope, points = spec["scopes"][v], spec["points"][v]
    wrong = [
        same_as(parts, scope, points, w["variants"][v], w["points"][v])
        for w in cell["wrong"]
    ]
    if same_as(parts, scope, points, cell["answer"][v], cell["points"][v]):
        # A rounding that fits a wrong form too ("9k") tells nothing apart.
        if any(ROUNDED.match(p) for p in parts) and any(wrong):
            return {"ok": False, "wrong": -1}
        return {"ok": True}
    return {"ok": False, "wrong": wrong.index(True) if any(wrong) else -1}


@pytest.fixture(scope="module")
def specs(lesson):
    fragments = ex.Fragments(["pymdownx.arithmatex"], {})
    ctx = ex.RenderContext(1, "k", fragments.block, fragments.inline)
    _, fill_ins = lesson
    return [
        (slide, exercise, fill_in_view(exercise, ctx)["spec"])
        for slide, _, exercise in fill_ins
    ]


def test_each_fill_in_takes_the_equivalent_forms(specs):
    for slide, exercise, spec in specs:
        for c, cell in enumerate(exercise.cells):
            for v, row in enumerate(exercise.rows):
                forms = right_forms(row[cell.column], cell.shape)
                forms.append(cell.formula)
                if cell.formula.startswith("("):
                    forms.append("[" + cell.formula[1:-1] + "]")
                    forms.append(cell.formula.replace("^", "**"))
                else:
                    forms.append(
                        cell.formula.replace("*", " ").replace("  ", " ")
                        if "+" not in cell.formula
                        else cell.formula
                    )
                for form in forms:
                    verdict = judge(form, spec["cells"][c], v, spec)
                    assert verdict == {"ok": True}, (
                        f"{slide.path}:{cell.line} variant {v}: {form!r} "
                        "should be right"
                    )


def test_each_wrong_form_gets_its_own_explanation(specs):
    for slide, exercise, spec in specs:
        for c, cell in enumerate(exercise.cells):
            s = spec["cells"][c]
            for v in range(len(exercise.rows)):
                for k, wrong in enumerate(cell.wrong):
                    if s["wrong"][k]["variants"][v] == s["answer"][v]:
                        continue  # e.g. "no bias term" for a bias-free one
                    # Forms that agree at the variant are told apart at
                    # the random points (÷h and "W_O only" when h = 4).
                    first = next(
                        j
                        for j, w in enumerate(s["wrong"])
                        if w["variants"][v] == s["wrong"][k]["variants"][v]
                        and w["points"][v] == s["wrong"][k]["points"][v]
                    )
                    verdict = judge(wrong.form, s, v, spec)
                    assert verdict == {"ok": False, "wrong": first}, (
                        f"{slide.path}:{cell.line} variant {v}: {wrong.form!r}"
                    )


def test_a_coincidence_at_the_variant_is_not_the_formula(specs):
    """d_model^2 * h / 2 equals 4 d_model^2 when h = 8; it is still wrong:
    symbolic answers are compared at random values of the symbols too."""
    tried = 0
    for slide, exercise, spec in specs:
        for c, cell in enumerate(exercise.cells):
            if cell.shape or "d_model^2" not in cell.formula:
                continue
            fake = f"({cell.formula}) * h / h^2 * h"  # = formula, by luck?
            assert judge(fake, spec["cells"][c], 0, spec)["ok"]
            fake = f"({cell.formula}) * h / 8"
            for v, scope in enumerate(spec["scopes"]):
                if scope.get("h") == 8:
                    assert fake_equal_here(spec["cells"][c], v, spec, fake)
                    verdict = judge(fake, spec["cells"][c], v, spec)
                    assert not verdict["ok"], (slide.path, fake)
                    tried += 1
    assert tried, "no variant with h = 8: the coincidence was never tried"


def fake_equal_here(cell, v, spec, fake) -> bool:
    """The fake does equal the answer at the variant's own numbers."""
    (value,) = [
        answers.values(p, spec["scopes"][v])
        for p in answers.split(fake, False)
    ]
    return answers.close(value, cell["answer"][v][0])


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['given']}~{c['formula']}" for c in CASES]
)
def test_shared_answer_cases(case):
    """The same cases run in Chromium (tests/browser/test_exercises_forms):
    the Python and the JavaScript judges agree."""
    spec = case_spec(case)
    verdict = judge(case["given"], spec["cells"][0], 0, spec)
    assert verdict["ok"] is case["right"], case


def case_spec(case: dict) -> dict:
    """A one-cell spec for a shared case, as render.fill_in_view makes
    them: the formula's values at the case's scope and random points."""
    shape = case["formula"].startswith("(")
    points = [
        {
            "d_model": 60,
            "h": 5,
            "d_k": 12,
            "t": 7,
            "t_q": 7,
            "t_k": 3,
            "b": 3,
            "bias": 0,
        },
        {
            "d_model": 66,
            "h": 3,
            "d_k": 22,
            "t": 4,
            "t_q": 4,
            "t_k": 9,
            "b": 2,
            "bias": 0,
        },
    ]
    parts = answers.split(case["formula"], shape)
    return {
        "scopes": [case["scope"]],
        "points": [points],
        "cells": [
            {
                "shape": shape,
                "answer": [[answers.values(p, case["scope"]) for p in parts]],
                "points": [
                    [[answers.values(p, pt) for p in parts] for pt in points]
                ],
                "wrong": [],
            }
        ],
    }
