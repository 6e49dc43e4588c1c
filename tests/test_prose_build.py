"""Numbers in prose come from the code, through a real build of the lesson.

A contributor adds h = 32 to slide 23's snippet and nothing else, then
accepts the new output as CONTRIBUTING says (``lessonbuild update``):
the built slides 22 and 23 show the new list and rows everywhere, in
prose, the exercise prompt, the Output block and the table. And a
published number typed by hand fails the strict build at its line,
naming the reference to write.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from tests.lesson_site import build, copy_lesson, lessonbuild

OLD_HEADS = "[1, 2, 4, 8, 16]"
NEW_HEADS = "[1, 2, 4, 8, 16, 32]"
SLIDE_22 = "slides/22-guess-the-shape-of-the-answer-verify-param.html"
SLIDE_23 = "slides/23-verify-param-count-for-any-h.html"


def _text(site, page: str) -> str:
    soup = BeautifulSoup(
        (site / page).read_text(encoding="utf-8"), "html.parser"
    )
    article = soup.select_one("article") or soup
    return " ".join(article.get_text(" ").split())


@pytest.fixture(scope="module")
def h32_site(tmp_path_factory):
    root = copy_lesson(tmp_path_factory.mktemp("h32"))
    snippet = root / "snippets" / "23_params.py"
    code = snippet.read_text(encoding="utf-8")
    assert code.count(OLD_HEADS) == 1, "slide 23's loop is not one list"
    snippet.write_text(code.replace(OLD_HEADS, NEW_HEADS), encoding="utf-8")
    before = {
        p.name: p.read_text(encoding="utf-8")
        for p in (root / "docs" / "slides").glob("*.md")
    }
    accepted = lessonbuild(root, "update")
    assert accepted.returncode == 0, accepted.stderr
    changed = [
        name
        for name, text in before.items()
        if (root / "docs" / "slides" / name).read_text(encoding="utf-8")
        != text
    ]
    # Accepting touches slide 23's Output block; no prose needs editing.
    assert changed == ["23-verify-param-count-for-any-h.md"], changed
    result = build(root)
    assert result.returncode == 0, result.stderr[-4000:]
    return root / "site"


def test_slides_22_and_23_show_the_new_heads_everywhere(h32_site):
    s22, s23 = _text(h32_site, SLIDE_22), _text(h32_site, SLIDE_23)
    new_list = "1, 2, 4, 8, 16, 32"
    assert f"h = {new_list}" in s22  # the exercise prompt
    assert f"For h = {new_list}, every row prints 1,048,576" in s23
    assert "h=32 d_k= 16 params=1,048,576" in s23  # the Output block
    soup = BeautifulSoup((h32_site / SLIDE_23).read_text(), "html.parser")
    rows = [
        [td.get_text(strip=True) for td in tr.find_all("td")]
        for tr in soup.select("article table tbody tr")
    ]
    assert [r[0] for r in rows] == ["1", "2", "4", "8", "16", "32"]
    assert rows[-1] == ["32", "16", "1,048,576"]
    # Nothing stale: the old list appears only as the start of the new.
    for text in (s22, s23):
        for match in re.finditer(r"1, 2, 4, 8, 16", text):
            assert text[match.end() :].startswith(", 32"), text


def test_a_hand_typed_published_number_fails_the_build_at_its_line(
    tmp_path,
):
    """A count (slide 23) and a shape (slide 15's trace: the weights
    nn.MultiheadAttention returned for B=1, h=2, T=4), typed by hand
    into prose: both reported in one build, each at its line, naming
    the reference to write."""
    root = copy_lesson(tmp_path)
    typed = {
        "23-verify-param-count-for-any-h.md": (
            "So each model holds 1,048,576 weights.",
            "'1,048,576' is typed by hand",
            '{{ value("23_params.total") }}',
        ),
        "15-trace-d-model-8-h-2-d-k-4-seq-4-batch-1.md": (
            "The weights come out as (1,2,4,4) here.",
            "'(1,2,4,4)' is typed by hand",
            '{{ value("15_trace.weights") }}',
        ),
    }
    expected = []
    for name, (sentence, message, reference) in typed.items():
        slide = root / "docs" / "slides" / name
        lines = slide.read_text(encoding="utf-8").splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith("# "))
        lines.insert(at + 1, f"\n{sentence}\n")
        slide.write_text("".join(lines), encoding="utf-8")
        expected.append((f"docs/slides/{name}:{at + 3}: {message}", reference))
    result = build(root)
    assert result.returncode != 0
    for where, reference in expected:
        assert where in result.stderr, result.stderr[-3000:]
        line = next(x for x in result.stderr.splitlines() if where in x)
        assert reference in line, line
    assert not (root / "site").exists()
