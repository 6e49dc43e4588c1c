"""Output blocks: compare each with its snippet's stdout; rewrite drift.

Only the lines between an Output block's fences change, written beside
the file and moved into place: an interrupted update leaves the old file
or the new one, never half.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..atomic import write_atomic
from ..deck import Fence, Slide
from ..problems import Problem
from .judge import unified_diff

#: Marks our temporary files: .<slide>.md<TMP_MARK><random>.
TMP_MARK = ".update-"


@dataclass
class Drift:
    """An Output block whose snippet now prints something else."""

    slide: Slide
    fence: Fence
    snippet: str
    actual: list[str]
    problem: Problem


def normalize(lines: list[str]) -> list[str]:
    """Drop trailing whitespace of every line and trailing blank lines."""
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def compare(slide: Slide, fence: Fence, rel: str, stdout: str, accept: str):
    """The drift of one Output block, or None when it matches."""
    expected = normalize(fence.content)
    actual = normalize(stdout.replace("\r\n", "\n").split("\n"))
    if expected == actual:
        return None
    where = f"{slide.path}:{fence.line}"
    detail = unified_diff(
        expected, actual, f"expected ({where})", f"actual ({rel})"
    )
    if expected:
        message = f"output of {rel} drifted"
        detail += "\naccept with: " + accept
    else:  # the message says how to fill it; no hint repeating it
        message = (
            f"Output block of {rel} is empty: run {accept} to fill it "
            "with what the snippet prints"
        )
    problem = Problem(slide.path, fence.line, message, detail, kind="drift")
    return Drift(slide, fence, rel, actual, problem)


def rewrite(root: Path, drifts: list[Drift]) -> list[Problem]:
    """Write each drifted Output block of one slide; problems if it moved."""
    slide = drifts[0].slide
    path = root / slide.path
    if path.read_bytes().decode("utf-8") != slide.text:
        message = "file changed while the snippets ran; run the update again"
        return [Problem(slide.path, 1, message)]
    lines = list(slide.lines)
    for drift in sorted(drifts, key=lambda d: -d.fence.start):
        fence, actual = drift.fence, drift.actual
        opening = lines[fence.start]
        newline = opening[len(opening.rstrip("\r\n")) :] or "\n"
        # A body line that looks like a closing fence would end the block
        # early: lengthen the fences past the longest such run.
        char = fence.marker[0]
        longest = max(
            (len(t) - len(t.lstrip(char)) for t in actual if t[:1] == char),
            default=0,
        )
        if longest >= len(fence.marker):
            for i in (fence.start, fence.end):
                lines[i] = lines[i].replace(
                    fence.marker, char * (longest + 1), 1
                )
        lines[fence.start + 1 : fence.end] = [
            (fence.indent + text if text else "") + newline for text in actual
        ]
    write_atomic(path, "".join(lines), prefix=TMP_MARK)
    return []


def remove_stale_temporaries(folder: Path) -> None:
    """Remove our temporary files (by name) that a killed update left;
    run before an update writes."""
    for path in folder.rglob(f".*.md{TMP_MARK}*"):
        if path.is_file():
            path.unlink(missing_ok=True)
