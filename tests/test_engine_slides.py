"""lessonbuild.engine.slides: fences, includes and macro calls in slides."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonbuild.engine.engine import _plan
from lessonbuild.engine.slides import parse_slide, split_target

ROOT = Path(__file__).resolve().parents[1]

SLIDE = """\
---
title: "A slide"
---

# A slide

```python title="snippets/15_trace.py"
--8<-- "snippets/15_trace.py:show"
```

```text title="Output"
input : (1, 4, 8)
```

??? example "Nested"
    ```python
    --8<-- "snippets/16_x.py"
    ```

    ````text title="Output"
    ````

{{ table("15_trace.shapes") }} and {{ table('15_trace.shapes', hide="shape") }}
{{ table(name) }}

;--8<-- "not/an/include.py"
"""


def test_fences_have_lines_info_and_content():
    """Fences carry 1-based lines, info, indent and dedented content."""
    slide = parse_slide("s.md", SLIDE)
    summary = [(f.line, f.indent, f.info, f.content) for f in slide.fences]
    assert summary == [
        (
            7,
            "",
            'python title="snippets/15_trace.py"',
            ['--8<-- "snippets/15_trace.py:show"'],
        ),
        (11, "", 'text title="Output"', ["input : (1, 4, 8)"]),
        (16, "    ", "python", ['--8<-- "snippets/16_x.py"']),
        (20, "    ", 'text title="Output"', []),
    ]
    assert [f.is_output for f in slide.fences] == [False, True, False, True]


def test_front_matter_is_not_a_fence_or_heading():
    """YAML front matter is blanked, keeping line numbers."""
    slide = parse_slide("s.md", "---\na: 1\n---\n```text\nx\n```\n")
    assert [f.line for f in slide.fences] == [4]


def test_includes_know_their_fence_and_section():
    """Include lines are found with their section; escaped ones are not."""
    slide = parse_slide("s.md", SLIDE)
    found = [(i.line, i.path, i.section, i.fence.line) for i in slide.includes]
    assert found == [
        (8, "snippets/15_trace.py", "show", 7),
        (17, "snippets/16_x.py", None, 16),
    ]


def test_output_block_pairs_with_the_block_above():
    """An Output block belongs to the fence right above it."""
    slide = parse_slide("s.md", SLIDE)
    code, out, nested_code, nested_out = slide.fences
    assert slide.block_above(out) is code
    assert slide.block_above(nested_out) is nested_code
    assert slide.block_above(code) is None


def test_table_calls_with_literal_arguments():
    """Literal table() calls are found with their line; others are left."""
    slide = parse_slide("s.md", SLIDE)
    calls = [(c.line, c.table_id, c.hide) for c in slide.tables]
    assert calls == [
        (23, "15_trace.shapes", None),
        (23, "15_trace.shapes", "shape"),
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("snippets/a.py", ("snippets/a.py", None)),
        ("snippets/a.py:show", ("snippets/a.py", "show")),
        ("mha_ref/mha.py:class", ("mha_ref/mha.py", "class")),
        ("snippets/a.py:3:9", ("snippets/a.py", None)),
    ],
)
def test_split_target(target, expected):
    """A target splits like pymdownx.snippets: path, then section."""
    assert split_target(target) == expected


def test_list_item_fence_indent_follows_the_marker():
    """Inside a list item, the body is indented to the fence's column."""
    slide = parse_slide("s.md", "- item\n\n  ```text\n  a\n  ```\n")
    assert [(f.indent, f.content) for f in slide.fences] == [("  ", ["a"])]


def test_no_inline_python_in_the_slides():
    """Every Python code block on the site comes from a file (issue #3)."""
    problems = []
    _plan(ROOT, ROOT / "docs", problems)
    inline = [str(p) for p in problems if p.kind == "inline"]
    assert inline == []
