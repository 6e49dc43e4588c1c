"""Read the course author's lesson export into per-slide key facts.

The deck tests compare the site against these facts, so they come from the
author's text (a copy of their export: tests/data/lesson-81-source.txt,
up to the end of its last slide; its list of sources, which named an
older torch than the one the project pins, is left out), never from our
own pages.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A copy of the author's export lives in the repo, so any clone can test.
SOURCE_CANDIDATES = [
    ROOT / "tests" / "data" / "lesson-81-source.txt",
]

SLIDE_HEADING = re.compile(r"^(\d{1,2})\. (.+)$")
OPTION = re.compile(r"^\s*•\s*([A-D])\. (.+?)(?: \(correct\))?$")
EXPLANATION_LABEL = re.compile(r"^(g\d+|s\d+|sound|flawed)$")
TEMPTS = re.compile(r"^Why ([A-D]) tempts people$")


@dataclass
class SourceSlide:
    number: int
    title: str
    kind: str
    lines: list[str] = field(default_factory=list)

    def after(self, prefix: str) -> list[str]:
        """Texts of the lines starting with ``prefix`` (prefix removed)."""
        return [
            line[len(prefix) :].strip()
            for line in self.lines
            if line.startswith(prefix) and line[len(prefix) :].strip()
        ]

    @property
    def options(self) -> dict[str, str]:
        found = {}
        for line in self.lines:
            m = OPTION.match(line)
            if m:
                found[m.group(1)] = m.group(2)
        return found

    @property
    def numbered_items(self) -> list[str]:
        """Items of the slide's numbered lists ("  1. Project: ...").

        A discussion's "Answer:" block is left out: it only repeats the
        slide, and the site replaces it with a real model answer.
        """
        items = []
        for line in self.lines:
            if line.strip() == "Answer:":
                break
            if m := re.match(r"^\s+\d+\. (.+)$", line):
                items.append(m.group(1))
        return items

    @property
    def bucket_items(self) -> dict[str, list[str]]:
        """Sort-into-buckets slides: bucket name -> items, in the source."""
        if "Sort into buckets" not in [x.strip() for x in self.lines]:
            return {}
        text = [x.strip() for x in self.lines if x.strip()]
        start = text.index("Sort into buckets") + 2  # skip the instructions
        buckets = {}
        rest = text[start:]
        while len(rest) >= 2 and not EXPLANATION_LABEL.match(rest[0]):
            buckets[rest[0]] = rest[1].split("; ")
            rest = rest[2:]
        return buckets

    @property
    def tempts(self) -> dict[str, str]:
        """'Why X tempts people' texts: the line after each such heading."""
        found = {}
        for i, line in enumerate(self.lines):
            m = TEMPTS.match(line.strip())
            if m:
                rest = [x for x in self.lines[i + 1 :] if x.strip()]
                found[m.group(1)] = rest[0].strip()
        return found


def source_path() -> Path:
    for path in SOURCE_CANDIDATES:
        if path.is_file():
            return path
    raise FileNotFoundError(
        "lesson-81-source.txt not found in "
        + ", ".join(str(p) for p in SOURCE_CANDIDATES)
    )


def read_lesson() -> dict[int, SourceSlide]:
    """Slides 1..55 of the export, each with its title, kind and lines."""
    text = source_path().read_text(encoding="utf-8")
    body = text.split("The lesson, slide by slide", 1)[1]
    body = body.split("\nSources\n", 1)[0]
    slides: dict[int, SourceSlide] = {}
    current: SourceSlide | None = None
    expect_kind = False
    for line in body.splitlines():
        m = SLIDE_HEADING.match(line)
        if m and int(m.group(1)) == len(slides) + 1:
            current = SourceSlide(int(m.group(1)), m.group(2), "")
            slides[current.number] = current
            expect_kind = True
            continue
        if current is None:
            continue
        if expect_kind and line.strip():
            current.kind = line.strip()
            expect_kind = False
            continue
        current.lines.append(line)
    return slides


def normalise(text: str) -> str:
    """Compare texts the way a reader does: ignore markup and spacing."""
    text = unicodedata.normalize("NFKC", text)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"\s+", " ", text)
    return text.strip().lower()
