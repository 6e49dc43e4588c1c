"""The deck's structure: which kinds and parts a slide may declare.

Plain Python (no MkDocs), so tests and the hook share one definition and a
bad front matter is reported with its file and line, all problems at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

SLIDE_COUNT = 55

KINDS = (
    "Title",
    "Objectives",
    "Warm-up",
    "Section",
    "Concept",
    "Counterexample",
    "Comparison",
    "Intuition",
    "Analogy",
    "Explain it",
    "Estimation",
    "Worked example",
    "Discrimination",
    "Trade off",
    "Anomaly",
    "Trap",
    "Break the constraint",
    "Sorting",
    "Two truths and a lie",
    "Ranking",
    "Pattern",
    "Edge cases",
    "Elimination",
    "Check",
    "Prediction",
    "Connect it up",
    "Recap",
)

#: The lesson's parts and the slide numbers each one spans.
PARTS = {
    "Opening": range(1, 4),
    "Part 1 — Why multiple heads?": range(4, 11),
    "Part 2 — Dataflow": range(11, 19),
    "Part 3 — Parameter count proof": range(19, 42),
    "Project — implement MHA": range(42, 53),
    "Closing": range(53, 56),
}

FILE_NAME = re.compile(r"^(\d{2})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")


@dataclass(frozen=True)
class Slide:
    path: Path
    number: int
    title: str
    kind: str
    part: str
    body: str
    body_line: int  # 1-based line of the first body line in the file


def split_front_matter(text: str) -> tuple[str, str, int]:
    """Return (front matter, body, first body line); raise on none."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValueError("line 1: expected front matter starting with ---")
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    raise ValueError("line 1: front matter has no closing ---")


def check_meta(meta: object, file_number: int | None) -> list[str]:
    """Problems with one slide's front matter, as 'what; expected' texts."""
    if not isinstance(meta, dict):
        return ["front matter is not a mapping; expected slide, kind, ..."]
    problems = []
    for key in ("title", "slide", "kind", "part"):
        if key not in meta:
            problems.append(f"front matter lacks '{key}'")
    number = meta.get("slide")
    if "slide" in meta and (
        not isinstance(number, int) or not 1 <= number <= SLIDE_COUNT
    ):
        problems.append(
            f"slide: {number!r} is not a number from 1 to {SLIDE_COUNT}"
        )
    elif file_number is not None and number != file_number:
        problems.append(
            f"slide: {number} does not match the file name's number "
            f"{file_number:02d}; rename the file or fix the number"
        )
    kind = meta.get("kind")
    if "kind" in meta and kind not in KINDS:
        problems.append(
            f"kind: {kind!r} is not a slide kind; expected one of "
            + ", ".join(KINDS)
        )
    part = meta.get("part")
    if "part" in meta and part not in PARTS:
        problems.append(
            f"part: {part!r} is not a part of the lesson; expected one of "
            + ", ".join(repr(p) for p in PARTS)
        )
    elif isinstance(number, int) and part in PARTS:
        if number not in PARTS[part]:
            problems.append(
                f"part: slide {number} is not in {part!r} "
                f"(slides {PARTS[part].start}–{PARTS[part].stop - 1})"
            )
    return problems


def load_slide(path: Path) -> tuple[Slide | None, list[str]]:
    """Parse one slide file; return it or the problems found."""
    match = FILE_NAME.match(path.name)
    file_number = int(match.group(1)) if match else None
    problems = []
    if not match:
        problems.append(
            "file name should be NN-slug.md (two digits, lowercase slug)"
        )
    try:
        front, body, body_line = split_front_matter(
            path.read_text(encoding="utf-8")
        )
        meta = yaml.safe_load(front)
    except (ValueError, yaml.YAMLError) as err:
        return None, problems + [str(err)]
    problems += check_meta(meta, file_number)
    if problems:
        return None, problems
    return (
        Slide(
            path=path,
            number=meta["slide"],
            title=str(meta["title"]),
            kind=meta["kind"],
            part=meta["part"],
            body=body,
            body_line=body_line,
        ),
        [],
    )


def load_deck(slide_dir: Path) -> tuple[list[Slide], list[str]]:
    """All slides in order, and every problem as 'path:line: message'."""
    slides: list[Slide] = []
    problems: list[str] = []
    for path in sorted(slide_dir.glob("*.md")):
        slide, found = load_slide(path)
        problems += [f"{path}:1: {p}" for p in found]
        if slide:
            slides.append(slide)
    problems += check_numbering(slides, slide_dir)
    return slides, problems


def check_numbering(slides: list[Slide], slide_dir: Path) -> list[str]:
    """The deck is numbered 1..SLIDE_COUNT with no gap or duplicate."""
    problems = []
    seen: dict[int, Path] = {}
    for slide in slides:
        if slide.number in seen:
            problems.append(
                f"{slide.path}:1: slide {slide.number} is also "
                f"{seen[slide.number]}; each number appears once"
            )
        seen.setdefault(slide.number, slide.path)
    missing = sorted(set(range(1, SLIDE_COUNT + 1)) - set(seen))
    if missing and slides:
        problems.append(
            f"{slide_dir}: no slide numbered "
            + ", ".join(str(n) for n in missing)
            + f"; the deck has {SLIDE_COUNT} slides"
        )
    return problems
