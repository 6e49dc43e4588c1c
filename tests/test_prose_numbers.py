"""lessonbuild.engine.prose: published values in prose are references.

Unit cases on parsed pages (no build): which hand-typed copies of a
published value are found, at which line, naming which reference; and
that exercise text gets the values filled in. tests/test_prose_build.py
proves the same through a real build of the lesson.
"""

from __future__ import annotations

from lessonbuild.deck import parse_slide
from lessonbuild.engine.prose import expand_values, hand_typed

VALUES = {
    "23_params.total": "1,048,576",
    "23_params.heads": "1, 2, 4, 8, 16",
    "15_trace.output": "(1, 4, 8)",
    "17_flops.ratio": "0.031",
    "15_trace.heads": "2",
}

FRONT = '---\ntitle: "T"\nslide: 3\nkind: Concept\npart: Opening\n---\n\n'


def _found(body: str, values=VALUES):
    slide = parse_slide("docs/slides/03-t.md", FRONT + body)
    return [
        (p.line - FRONT.count("\n"), p.message)
        for p in hand_typed([slide], values)
    ]


def test_a_typed_copy_is_found_at_its_line_naming_the_reference():
    found = _found("# T\n\nIntro.\n\nEvery row prints 1,048,576 here.\n")
    assert len(found) == 1, found
    line, message = found[0]
    assert line == 5
    assert "'1,048,576' is typed by hand" in message
    assert '{{ value("23_params.total") }}' in message
    assert "snippets/23_params.py" in message


def test_every_way_prose_writes_a_number_is_a_copy():
    for typed in ("1048576", "1 048 576", r"\(1{,}048{,}576\)", "1_048_576"):
        assert len(_found(f"# T\n\nIt is {typed}.\n")) == 1, typed


def test_lists_shapes_and_fractions_are_copies():
    found = _found(
        "# T\n\nFor h=1, 2, 4, 8, 16 we loop.\n\n"
        "The output is (1, 4, 8) again.\n\nRatio 0.031 of it.\n"
    )
    assert [line for line, _ in found] == [3, 5, 7], found
    assert "23_params.heads" in found[0][1]
    assert "15_trace.output" in found[1][1]
    assert "17_flops.ratio" in found[2][1]
    # Arithmetic can derive one number, never a list or a shape: only the
    # number's message offers it.
    assert ["arithmetic" in message for _, message in found] == [
        False,
        False,
        True,
    ]


def test_a_different_or_longer_number_is_not_a_copy():
    assert not _found(
        "# T\n\n2,048,576 and 1,048,5760 and 11,048,576 and "
        "h=1, 2, 4, 8, 16, 32 and (1, 4, 8, 2) and 10.031.\n"
    )


def test_small_integers_are_too_common_to_flag():
    assert not _found("# T\n\nWith 2 heads of width 4.\n")


def test_a_number_derived_by_arithmetic_on_the_line_is_not_a_copy():
    assert not _found(
        "# T\n\nHere \\(4 \\cdot 512^2 = 1{,}048{,}576\\).\n\n"
        "Total \\(= 4\\,d_{\\text{model}}^2 = 4 \\cdot 512^2 = "
        "1{,}048{,}576\\).\n\n"
        "- text: '1,048,576 \\(= 4 \\cdot 512^2\\)'\n"
    )
    # Arithmetic that gives something else does not excuse a copy.
    assert len(_found("# T\n\nHere \\(4 \\cdot 256^2 = 1{,}048{,}576\\).\n"))
    # Nor does a part of it that happens to give the copy: 1024^2 is
    # 1,048,576, 3 * 1024^2 is not (read as a reader reads it), on
    # either side of the copy.
    assert len(_found("# T\n\nHere \\(3 \\cdot 1024^2 = 1{,}048{,}576\\).\n"))
    assert len(_found("# T\n\nHere \\(1{,}048{,}576 = 1024^2 \\cdot 3\\).\n"))


def test_code_outputs_and_macros_are_not_prose_but_exercises_and_notes_are():
    body = (
        "# T\n\n"
        '```text title="Output"\nparams=1,048,576\n```\n\n'
        '{{ value("23_params.total") }} and {{ table("23_params.x") }}\n\n'
        "```exercise\nkind: predict\nprompt: |\n  Is it 1,048,576?\n"
        "answer: a\nwhy: w\n```\n\n"
        '??? instructor "Instructor notes"\n    **Ask:** 1,048,576?\n'
    )
    assert [line for line, _ in _found(body)] == [12, 18]


def test_expand_values_fills_known_calls_and_leaves_unknown_ones():
    text = (
        'h = {{ value("23_params.heads") }}; '
        "{{value('23_params.total')}}; {{ value(\"nope.x\") }}"
    )
    assert expand_values(text, VALUES) == (
        'h = 1, 2, 4, 8, 16; 1,048,576; {{ value("nope.x") }}'
    )


def test_an_exercises_names_and_formulas_are_not_prose():
    """An id, a table's name or a formula restates no published value
    (a trial's `id: param-count-256` was flagged); its text still is."""
    found = _found(
        "# T\n\n```exercise\nkind: check\nid: count-1048576\n"
        "question: Is it 1,048,576?\noptions:\n"
        "  - text: yes\n    correct: true\n    formula: 1048576\n"
        "  - text: no\n    tempts: t\nexplanation: e\n```\n"
    )
    assert [line for line, _ in found] == [6], found


def test_a_number_typed_into_a_table_row_is_told_the_snippets_table():
    """In a Markdown table the fix is the table the snippet publishes
    (every row from the run), not one value in one cell; the same copy
    twice on a line says so, rather than two lines no one can tell apart."""
    slide = parse_slide(
        "docs/slides/03-t.md",
        FRONT + "# T\n\n| h | params |\n|---|---|\n| 32 | 1,048,576 |\n\n"
        "Once **1,048,576**, twice <abbr title='1,048,576'>it</abbr>.\n",
    )
    tables = ["23_params.by_heads", "15_trace.shapes"]
    found = {
        p.line - FRONT.count("\n"): p.message
        for p in hand_typed([slide], VALUES, tables)
    }
    assert set(found) == {5, 7}, found
    assert '{{ table("23_params.by_heads") }}' in found[5]
    assert "15_trace" not in found[5] and "value(" not in found[5]
    assert "(2 times on this line)" in found[7]
    assert '{{ value("23_params.total") }}' in found[7]
    # Without the snippet's tables, a row is told the value, as prose is.
    [row] = [
        p
        for p in hand_typed([slide], VALUES)
        if p.line - FRONT.count("\n") == 5
    ]
    assert '{{ value("23_params.total") }}' in row.message


def test_a_copy_on_a_slide_without_the_snippets_code_may_be_another_quantity():
    """A new count of 128 flagged slide 17's T = 128 (a contributor's
    pull request), and the message only said to refer to the count: on a
    slide that shows none of the snippet's code, it says the number may
    be another quantity and what to do then; beside the code, it does
    not."""
    body = "# T\n\nEvery row prints 1,048,576 here.\n"
    ((_, alone),) = _found(body)
    assert "this slide shows no code of snippets/23_params.py" in alone
    assert "another quantity that shares the digits" in alone
    shown = '\n```python\n--8<-- "snippets/23_params.py"\n```\n'
    ((_, beside),) = _found(body + shown)
    assert '{{ value("23_params.total") }}' in beside
    assert "another quantity" not in beside
