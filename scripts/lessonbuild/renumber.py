"""Insert a slide mid-deck: ``make insert-slide SLIDE=docs/slides/25-x.md``.

A slide's number is its place in the lesson, and its file name starts
with it, so a slide inserted at 25 moves every later one. Done by hand,
that was 31 renames, their ``slide:`` lines and every address naming
them (34 problems at the first build). Here the new slide's front matter
says the number it takes; every other slide with that number or a later
one moves up by one: its file is renamed (``git mv`` where git tracks
it) and its ``slide:`` line rewritten, and each ``slides/NN-name.html``
(or ``.md``) address and each ``ref("NN-name")`` under the folders that
name slides follows. A ``ref("name")`` needs nothing. Students' saved
answers are keyed by a page's address: they stay with the old one.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

#: Where a slide may be named by its address or stem.
FOLDERS = ("docs", "snippets", "mha_ref", "notebooks", "tests")
SUFFIXES = {".md", ".py", ".yml", ".json", ".txt", ".html"}
_SLIDE_LINE = re.compile(r"^slide:[ \t]*(\d+)[ \t]*$", re.M)
_FILE = re.compile(r"^(\d+)-(.+)\.md$")


class RenumberError(ValueError):
    """The slide to insert cannot be placed: the message says why."""


def _front_number(text: str, path: Path) -> int:
    """The ``slide:`` of a page's front matter."""
    front = text.split("\n---", 1)[0] if text.startswith("---") else ""
    match = _SLIDE_LINE.search(front)
    if not match:
        raise RenumberError(
            f"{path}: no 'slide: N' in its front matter; expected the "
            "number the slide takes, e.g. 'slide: 25'"
        )
    return int(match[1])


def plan(root: Path, new: Path) -> dict[Path, Path]:
    """{old file: new file} for the slides ``new`` moves: those with its
    number or a later one, each one place on."""
    slides = root / "docs" / "slides"
    new = (root / new).resolve() if not new.is_absolute() else new
    if new.parent != slides.resolve() or not new.is_file():
        raise RenumberError(
            f"{new}: expected a slide file under docs/slides/, written "
            "with the number it takes (e.g. docs/slides/25-my-slide.md)"
        )
    at = _front_number(new.read_text(encoding="utf-8"), new)
    moves = {}
    for path in sorted(slides.glob("*.md")):
        match = _FILE.match(path.name)
        if path.resolve() == new or not match:
            continue
        number = _front_number(path.read_text(encoding="utf-8"), path)
        if number >= at:
            width = len(match[1])
            moves[path] = path.with_name(
                f"{number + 1:0{width}d}-{match[2]}.md"
            )
    return moves


def apply(root: Path, moves: dict[Path, Path]) -> list[str]:
    """Rename, renumber and re-address; what changed, a line each."""
    stems = {old.stem: moved.stem for old, moved in moves.items()}
    # One pass over every name at once: 25 -> 26 must not then become 27.
    names = "|".join(sorted(map(re.escape, stems), key=len, reverse=True))
    address = re.compile(
        rf"(?<=slides/)({names})(?=\.(?:html|md)\b)|(?<=ref\([\"'])({names})"
        rf"(?=[\"'])|(?<=to=[\"'])({names})(?=[\"'])"
    )
    done = []
    # Last first: a rename never lands on a file still to move.
    for old in sorted(moves, reverse=True):
        moved = moves[old]
        text = old.read_text(encoding="utf-8")
        number = _front_number(text, old)
        text = _SLIDE_LINE.sub(f"slide: {number + 1}", text, count=1)
        old.write_text(text, encoding="utf-8")
        tracked = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", str(old)],
            capture_output=True,
        )
        if tracked.returncode == 0:
            subprocess.run(
                ["git", "-C", str(root), "mv", str(old), str(moved)],
                check=True,
            )
        else:
            old.rename(moved)
        done.append(f"{old.relative_to(root)} -> {moved.name}")
    if not stems:
        return done
    for folder in FOLDERS:
        base = root / folder
        for path in sorted(base.rglob("*")) if base.is_dir() else ():
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            changed = address.sub(lambda m: stems[m[0]], text)
            if changed != text:
                path.write_text(
                    changed, encoding="utf-8", errors="surrogateescape"
                )
                done.append(f"{path.relative_to(root)}: addresses updated")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild.renumber",
        description="Insert a slide: it takes the number in its front "
        "matter, and every slide from that number on moves up by one.",
    )
    parser.add_argument("slide", type=Path, help="docs/slides/NN-name.md")
    parser.add_argument("--root", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        done = apply(root, plan(root, args.slide))
    except (RenumberError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(done) or "nothing to move: no slide has that number")
    print("now: make build (snippets keep their names; rename one with its")
    print("includes if you like)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
