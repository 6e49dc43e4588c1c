"""lessonbuild.deck: every page read once into a Slide, problems at lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from lessonbuild.deck import parse_slide, read_deck, split_target
from lessonbuild.engine.check import inline_code_problems
from lessonbuild.settings import read_settings

ROOT = Path(__file__).resolve().parents[1]
PARTS = ["Opening", "Middle", "Closing"]

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

??? instructor "Instructor notes"
    **Ask:** why?

    **Time:** 4 min

```exercise
kind: predict
```
"""


def test_fences_have_lines_info_and_content():
    """Fences carry 1-based lines, info, indent and dedented content."""
    slide = parse_slide("s.md", SLIDE)
    summary = [(f.line, f.indent, f.info, f.content) for f in slide.fences]
    assert summary[:4] == [
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
    assert [f.is_output for f in slide.fences] == [
        False,
        True,
        False,
        True,
        False,
    ]


def test_exercise_fences_and_instructor_notes():
    """Exercise fences keep their YAML body; notes keep text and minutes."""
    slide = parse_slide("s.md", SLIDE)
    assert [(f.line, f.body) for f in slide.exercises] == [
        (33, "kind: predict")
    ]
    assert [(n.line, n.minutes) for n in slide.notes] == [(28, 4.0)]
    assert slide.notes[0].text.startswith("**Ask:** why?")


def test_front_matter_is_not_a_fence_and_keeps_key_lines():
    """YAML front matter is blanked, keeping line numbers and key lines."""
    slide = parse_slide("s.md", "---\na: 1\nb: 2\n---\n```text\nx\n```\n")
    assert [f.line for f in slide.fences] == [5]
    assert slide.meta == {"a": 1, "b": 2}
    assert slide.line_of("b") == 3


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
    code, out, nested_code, nested_out, _ = slide.fences
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
    """Every Python code block on the site comes from a file."""
    deck = read_deck(ROOT, parts=read_settings(ROOT).parts)
    inline = [
        str(p) for page in deck.pages for p in inline_code_problems(page)
    ]
    assert inline == []


# --- the deck's structure ----------------------------------------------------


def write_slide(folder: Path, name: str, **meta) -> Path:
    fields = {
        "title": "T",
        "slide": int(name[:2]),
        "kind": "Concept",
        "part": "Opening",
    }
    fields.update(meta)
    front = "".join(
        f"{k}: {v!r}\n" if isinstance(v, str) else f"{k}: {v}\n"
        for k, v in fields.items()
        if v is not None
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"---\n{front}---\n# T\n", encoding="utf-8")
    return path


def problems_of(root: Path) -> list[str]:
    return [str(p) for p in read_deck(root, parts=PARTS).problems]


def test_a_good_deck_has_no_problems_and_its_parts(tmp_path):
    """Slides load with their fields, grouped into the configured parts."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", kind="Title")
    write_slide(slides, "02-b.md", part="Middle")
    write_slide(slides, "03-c.md", part="Middle")
    deck = read_deck(tmp_path, parts=PARTS)
    assert deck.problems == []
    assert [(s.number, s.kind) for s in deck.slides] == [
        (1, "Title"),
        (2, "Concept"),
        (3, "Concept"),
    ]
    assert [(p.name, [s.number for s in p.slides]) for p in deck.parts] == [
        ("Opening", [1]),
        ("Middle", [2, 3]),
    ]


def test_a_title_edited_alone_is_reported_at_its_heading(tmp_path):
    """The front matter's title is what the navigation, the tab and the
    deck show; the page shows its heading: edited alone, the two
    disagreed and the build passed (a fresh-eyes contributor)."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", title="Another title")
    path = write_slide(slides, "02-b.md")
    path.write_text(path.read_text().replace("# T\n", "Text, no heading\n"))
    assert problems_of(tmp_path) == [
        "docs/slides/01-a.md:7: heading '# T' differs from the front "
        "matter's title: 'Another title'; make them the same",
        "docs/slides/02-b.md:7: no '# T' heading; the body starts with it",
    ]


def test_every_front_matter_problem_is_reported_at_its_line(tmp_path):
    """Unknown kind, unknown part, number mismatch, missing key, a gap."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", kind="Lecture")
    write_slide(slides, "02-b.md", part="Finale")
    write_slide(slides, "03-c.md", slide=5)
    write_slide(slides, "04-d.md", part=None)
    text = "\n".join(problems_of(tmp_path))
    assert "docs/slides/01-a.md:4: kind: 'Lecture' is not a slide kind" in text
    assert "docs/slides/02-b.md:5: part: 'Finale' is not a part" in text
    assert (
        "docs/slides/03-c.md:3: slide: 5 does not match the file name's "
        "number 03" in text
    )
    assert "docs/slides/04-d.md:1: front matter lacks 'part:'" in text
    assert "no slide numbered 3; expected slides numbered 1 to 4" in text


def test_a_macro_in_a_title_is_an_error_at_its_line(tmp_path):
    """A title is shown as typed (the navigation, the tab, the deck): a
    contributor's {{ value(...) }} there built green and was published
    raw on eleven pages."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", title='Count ({{ value("x.total") }}?)')
    (problem,) = problems_of(tmp_path)
    assert problem.startswith("docs/slides/01-a.md:2: title: "), problem
    assert "macro" in problem and "write it in words" in problem


def test_parts_out_of_order_are_reported(tmp_path):
    """A part's slides must be together, in the configured order."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", part="Middle")
    write_slide(slides, "02-b.md", part="Opening")
    text = "\n".join(problems_of(tmp_path))
    assert "02-b.md:5: part: slide 2 is in 'Opening' but comes after" in text


def test_empty_front_matter_is_reported_not_a_crash(tmp_path):
    """'---' then '---' at once: each missing key a problem at line 1."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", kind="Title")
    (slides / "02-b.md").write_text("---\n---\n# B\n")
    text = "\n".join(problems_of(tmp_path))
    for key in ("title", "slide", "kind", "part"):
        assert f"docs/slides/02-b.md:1: front matter lacks '{key}:'" in text


def test_duplicates_missing_front_matter_and_bad_names(tmp_path):
    """Two files claiming one number, no front matter, a bad file name."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md")
    write_slide(slides, "01-b.md")
    (slides / "02-c.md").write_text("# no front matter\n")
    (slides / "Slide 3.md").write_text(
        "---\ntitle: T\nslide: 3\nkind: Concept\npart: Opening\n---\n"
    )
    text = "\n".join(problems_of(tmp_path))
    assert "01-b.md:3: slide 1 is also docs/slides/01-a.md" in text
    assert "02-c.md:1: expected front matter" in text
    assert "Slide 3.md:1: file name should be NN-slug.md" in text


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xef\xbb\xbf---\n", "01-a.md:1: the file starts with a byte-order"),
        (
            b"---\ntitle: T\n---\nok\nbad \xff here\n",
            "01-a.md:5: not valid UTF-8 at column 5",
        ),
        (
            b"---\ntitle: T\nslide: 1\nkind: [a, b]\npart: Opening\n---\n",
            "01-a.md:4: kind: expected a single text value, got list",
        ),
        (
            b"---\na: &x [1]\nb: *x\n---\n",
            "01-a.md:3: front matter is not valid YAML: aliases",
        ),
        (
            b"---\ntitle: T\nslide: 1\ntitle: U\n---\n",
            "01-a.md:4: 'title:' appears twice; keep one",
        ),
        (
            b"---\ntitle: [T\n---\n",
            "01-a.md:3: front matter is not valid YAML: ",
        ),
    ],
)
def test_bad_bytes_and_types_are_reported_at_their_line(
    tmp_path, content, expected
):
    """BOM, bad UTF-8, a list as kind, an alias: clear, at the line."""
    slides = tmp_path / "docs" / "slides"
    slides.mkdir(parents=True)
    (slides / "01-a.md").write_bytes(content)
    assert expected in "\n".join(problems_of(tmp_path))


def test_the_lesson_deck_is_whole():
    """The real deck: no problems, every slide in a configured part."""
    settings = read_settings(ROOT)
    deck = read_deck(ROOT, parts=settings.parts)
    assert [str(p) for p in deck.problems] == []
    numbers = [s.number for s in deck.slides]
    assert numbers == list(range(1, len(numbers) + 1))
    in_parts = [s.number for p in deck.parts for s in p.slides]
    assert in_parts == numbers


def test_a_gap_left_by_a_file_whose_front_matter_failed_names_it(tmp_path):
    """Invalid YAML in slide 2's front matter also left 'no slide
    numbered 2' at docs/slides:1, which read as a missing file (a
    contributor's unclosed quote): the gap names the file and its
    problem."""
    slides = tmp_path / "docs" / "slides"
    write_slide(slides, "01-a.md", kind="Title")
    path = write_slide(slides, "02-b.md")
    path.write_text(path.read_text().replace("title: 'T'", 'title: "T'))
    write_slide(slides, "03-c.md")
    text = "\n".join(problems_of(tmp_path))
    # At the quote, saying so (it was at the line YAML stopped on, three
    # below, "did not find expected key").
    assert (
        "docs/slides/02-b.md:2: front matter is not valid YAML: this line "
        'opens a " quote it does not close' in text
    ), text
    assert (
        "no slide numbered 2; expected slides numbered 1 to 3 with no gap "
        "(docs/slides/02-b.md is named for it but gave no number: fix the "
        "problem reported there)" in text
    ), text
