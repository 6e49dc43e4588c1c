"""lessonbuild.slides: a malformed deck is reported with file and line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lessonbuild.slides import load_deck

ROOT = Path(__file__).resolve().parents[1]


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
    path = folder / name
    path.write_text(f"---\n{front}---\n# T\n", encoding="utf-8")
    return path


def test_a_good_slide_loads_without_problems(tmp_path):
    """A slide with valid front matter loads with its fields."""
    write_slide(tmp_path, "02-objectives.md", kind="Objectives")
    slides, problems = load_deck(tmp_path)
    assert [(s.number, s.kind) for s in slides] == [(2, "Objectives")]
    assert problems == [
        f"{tmp_path}: no slide numbered 1, "
        + ", ".join(str(n) for n in range(3, 56))
        + "; the deck has 55 slides"
    ]


def test_every_front_matter_problem_is_reported_together(tmp_path):
    """Unknown kind, wrong part, number mismatch: one message each."""
    write_slide(tmp_path, "01-a.md", kind="Lecture")
    write_slide(tmp_path, "02-b.md", part="Closing")
    write_slide(tmp_path, "03-c.md", slide=4)
    write_slide(tmp_path, "04-d.md", part=None)
    _, problems = load_deck(tmp_path)
    text = "\n".join(problems)
    assert f"{tmp_path}/01-a.md:1: kind: 'Lecture' is not a slide kind" in text
    assert f"{tmp_path}/02-b.md:1: part: slide 2 is not in 'Closing'" in text
    assert (
        f"{tmp_path}/03-c.md:1: slide: 4 does not match the file name's "
        "number 03" in text
    )
    assert f"{tmp_path}/04-d.md:1: front matter lacks 'part'" in text


def test_duplicate_numbers_and_missing_front_matter(tmp_path):
    """Two files claiming one number, and a file with no front matter."""
    write_slide(tmp_path, "01-a.md")
    write_slide(tmp_path, "01-b.md")
    (tmp_path / "02-c.md").write_text("# no front matter\n")
    _, problems = load_deck(tmp_path)
    text = "\n".join(problems)
    assert "01-b.md:1: slide 1 is also" in text
    assert "02-c.md:1: line 1: expected front matter starting with ---" in text


def test_bad_file_name_is_reported(tmp_path):
    """A slide file must be named NN-slug.md."""
    write_slide(tmp_path, "01-a.md")
    (tmp_path / "Slide 2.md").write_text(
        "---\ntitle: T\nslide: 2\nkind: Concept\npart: Opening\n---\n"
    )
    _, problems = load_deck(tmp_path)
    assert any(
        "Slide 2.md:1: file name should be NN-slug.md" in p for p in problems
    )


def test_mkdocs_build_stops_on_a_bad_slide(tmp_path):
    """The real hook aborts a real build, naming the file, writing no page."""
    docs = tmp_path / "docs"
    (docs / "slides").mkdir(parents=True)
    (docs / "index.md").write_text("# Home\n")
    write_slide(docs / "slides", "01-a.md", kind="Lecture")
    hook = ROOT / "scripts" / "lessonbuild" / "hooks" / "slide_hook.py"
    (tmp_path / "mkdocs.yml").write_text(
        f"site_name: t\nhooks:\n  - {hook}\n", encoding="utf-8"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "docs/slides/01-a.md:1: kind: 'Lecture'" in result.stderr
    assert not (tmp_path / "site" / "slides" / "01-a.html").exists()
