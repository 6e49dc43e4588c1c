"""Inserting a slide mid-deck (lessonbuild/renumber.py): the later
slides move up by one, files, front matter and addresses alike, and the
lesson passes its fast checks with no reference rewritten by hand."""

from __future__ import annotations

import re
import shutil

from lessonbuild import renumber
from lessonbuild.deck import read_deck
from lessonbuild.fastcheck import fast_problems
from tests.lesson_site import REPO, copy_lesson


def test_a_slide_inserted_at_25_moves_the_later_ones(tmp_path, capsys):
    root = copy_lesson(tmp_path)
    slides = root / "docs" / "slides"
    before = read_deck(root).slides
    old_25 = next(s for s in before if s.number == 25)
    (slides / "25-bias-terms.md").write_text(
        "---\ntitle: Bias terms\nslide: 25\nkind: Concept\n"
        f"part: {old_25.meta['part']!r}\n---\n\n# Bias terms\n\n"
        'Each bias adds d_model. See {{ ref("trap-wrong-reshape-order-'
        'for-head-splitting") }}.\n',
        encoding="utf-8",
    )
    documents = root / "CONTRIBUTING.md"
    if not documents.exists():  # a copy's own, not a link to ours
        shutil.copy(REPO / "CONTRIBUTING.md", documents)
    ours = {p: p.read_bytes() for p in (REPO / "scripts").rglob("*.py")}
    assert (
        renumber.main(["docs/slides/25-bias-terms.md", "--root", str(root)])
        == 0
    )
    # The documents at the top followed; scripts/, linked into the copy
    # from the project, is the project's and stays as it was.
    text = documents.read_text(encoding="utf-8")
    assert "slides/38-check-yourself-parameter-count" in text
    assert "slides/37-check-yourself" not in text
    assert "slides/23-verify-param-count-for-any-h" in text  # before 25
    assert ours == {p: p.read_bytes() for p in ours}
    deck = read_deck(root)
    assert [s.number for s in deck.slides] == list(range(1, 57))
    by_number = {s.number: s.path for s in deck.slides}
    assert by_number[25] == "docs/slides/25-bias-terms.md"
    moved = old_25.path.replace("/25-", "/26-")
    assert by_number[26] == moved
    for slide in deck.slides:  # each file is named by its number
        assert re.search(rf"/{slide.number:02d}-", slide.path), slide.path
    # The Python addresses (the grader's hints, snippets) followed.
    grade = (root / "mha_ref" / "grade.py").read_text(encoding="utf-8")
    assert "slides/41-rule-out-three-check-yourself-reshape-order" in grade
    assert "slides/40-rule-out" not in grade
    assert fast_problems(root) == []
    assert "25-something" in capsys.readouterr().out


def test_a_slide_without_a_number_is_refused_and_nothing_moves(
    tmp_path, capsys
):
    root = copy_lesson(tmp_path)
    new = root / "docs" / "slides" / "25-x.md"
    new.write_text("---\ntitle: X\n---\n\n# X\n", encoding="utf-8")
    names = sorted(p.name for p in new.parent.glob("*.md"))
    assert renumber.main([str(new), "--root", str(root)]) == 2
    assert "no 'slide: N' in its front matter" in capsys.readouterr().err
    assert sorted(p.name for p in new.parent.glob("*.md")) == names


def test_in_git_the_moves_are_staged_and_the_new_slide_named(tmp_path, capsys):
    """The moved slides are renamed with git mv; the new slide is not
    tracked yet, and a contributor left it out of their commit: the
    tool says to add it."""
    import subprocess

    root = copy_lesson(tmp_path)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A", "docs"], check=True)
    subprocess.run([*git, "commit", "-qm", "lesson"], check=True)
    part = read_deck(root).slides[-1].meta["part"]
    (root / "docs" / "slides" / "55-extra.md").write_text(
        f"---\ntitle: Extra\nslide: 55\nkind: Concept\npart: {part!r}\n"
        "---\n\n# Extra\n\nMore.\n",
        encoding="utf-8",
    )
    status = renumber.main(["docs/slides/55-extra.md", "--root", str(root)])
    assert status == 0
    out = capsys.readouterr().out
    assert "git add docs/slides/55-extra.md" in out
    staged = subprocess.run(
        [*git, "diff", "--cached", "--name-status"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "R" in staged and "56-" in staged, staged


def test_a_slide_with_problems_of_its_own_is_refused_whole_first(
    tmp_path, capsys
):
    """A file named 24 whose front matter says 25, with a part the
    lesson lacks and a heading apart from its title: every problem is
    named at its line, and no slide moves (the tool moved 31 slides and
    the check after it named the mismatch)."""
    root = copy_lesson(tmp_path)
    slides = root / "docs" / "slides"
    new = slides / "24-x.md"
    new.write_text(
        "---\ntitle: X\nslide: 25\nkind: Concept\npart: Nowhere\n---\n\n"
        "# Y\n\nText.\n",
        encoding="utf-8",
    )
    before = {p.name: p.read_bytes() for p in slides.glob("*.md")}
    assert renumber.main([str(new), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "nothing moved" in err
    assert "24-x.md:3: slide: 25 does not match the file name's number" in err
    assert "24-x.md:5: part: 'Nowhere' is not a part of the lesson" in err
    assert "24-x.md:8: heading '# Y' differs" in err
    assert {p.name: p.read_bytes() for p in slides.glob("*.md")} == before


def test_a_misspelt_slide_is_said_to_be_missing(tmp_path, capsys):
    root = copy_lesson(tmp_path)
    gone = "docs/slides/24-no-such-slide.md"
    assert renumber.main([gone, "--root", str(root)]) == 2
    assert f"{gone}: no such file;" in capsys.readouterr().err
