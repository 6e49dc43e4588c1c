"""Insert a slide mid-deck: ``make insert-slide SLIDE=docs/slides/25-x.md``.

A slide's file name starts with its number, so one inserted at 25 moves
every later one (by hand: 31 renames and 34 problems at the first
build). The new slide's front matter says the number it takes; every
slide from that number on moves up by one: its file (``git mv`` where
tracked), its ``slide:`` line, and each ``slides/NN-name.html`` (or
``.md``) address and ``ref("NN-name")`` naming it. Saved answers are
keyed by address: they stay with the old one.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from .deck import parse_slide, read_deck
from .problems import report
from .settings import SettingsError, read_settings

#: Where a slide may be named by address or stem (slides themselves are
#: read and written through the deck), and the top-level documents.
FOLDERS = ("snippets", "mha_ref", "notebooks", "tests", "scripts")
DOCUMENTS = ("README.md", "CONTRIBUTING.md", "ARCHITECTURE.md")
SUFFIXES = {".py", ".yml", ".json", ".txt", ".html", ".md"}
_FILE = re.compile(r"^(\d+)-(.+)\.md$")


class RenumberError(ValueError):
    """The slide to insert cannot be placed: the message says why."""


def _tracked(root: Path, path: Path) -> bool:
    ask = ["git", "-C", root, "ls-files", "--error-unmatch", path]
    return subprocess.run(ask, capture_output=True).returncode == 0


def _number(slide) -> int:
    number = slide.meta.get("slide")
    if type(number) is not int:
        raise RenumberError(
            f"{slide.path}:{slide.line_of('slide')}: no 'slide: N' in its "
            "front matter; expected the number the slide takes, e.g. "
            "'slide: 25'"
        )
    return number


def plan(deck, new: Path) -> dict[str, Path]:
    """{slide's path: its new file} for each slide ``new`` moves on."""
    root = deck.root
    wanted = (root / new).resolve()
    here = [s for s in deck.pages if (root / s.path).resolve() == wanted]
    if wanted.parent != deck.docs / "slides" or not here:
        missing = "" if wanted.exists() else "no such file; "
        raise RenumberError(
            f"{new}: {missing}expected a slide file under docs/slides/, "
            "written with the number it takes (e.g. "
            "docs/slides/25-my-slide.md)"
        )
    at = _number(here[0])
    # All its own problems first: a file named 24 whose front matter
    # said 25 moved 31 slides, and only the check after named it.
    own: list = []
    parse_slide(here[0].path, here[0].text, own, True, deck.part_names)
    if own:
        raise RenumberError(
            f"{new} is not ready to insert; nothing moved:\n" + report(own)
        )
    moves = {}
    for slide in deck.pages:
        path = root / slide.path
        match = _FILE.match(path.name)
        if slide is here[0] or not match or path.parent != wanted.parent:
            continue
        if (number := _number(slide)) >= at:
            name = f"{number + 1:0{len(match[1])}d}-{match[2]}.md"
            moves[slide.path] = path.with_name(name)
    return moves


def apply(deck, moves: dict[str, Path]) -> list[str]:
    """Rename, renumber and re-address; what changed, a line each."""
    root = deck.root
    stems = {Path(old).stem: moved.stem for old, moved in moves.items()}
    # One pass over every name at once: 25 -> 26 must not then become 27.
    names = "|".join(sorted(map(re.escape, stems), key=len, reverse=True))
    address = re.compile(
        rf"(?<=slides/)({names})(?=\.(?:html|md)\b)|(?<=ref\([\"'])({names})"
        rf"(?=[\"'])|(?<=to=[\"'])({names})(?=[\"'])"
    )

    def readdress(text: str) -> str:
        return address.sub(lambda m: stems[m[0]], text) if stems else text

    done = []
    for slide in deck.pages:
        lines = list(slide.lines)
        if slide.path in moves:
            n = slide.line_of("slide") - 1
            ending = lines[n][len(lines[n].rstrip("\r\n")) :]
            lines[n] = f"slide: {_number(slide) + 1}{ending}"
        text = readdress("".join(lines))
        if text != slide.text:
            (root / slide.path).write_text(text, encoding="utf-8", newline="")
            if slide.path not in moves:
                done.append(f"{slide.path}: addresses updated")
    for rel in sorted(moves, reverse=True):  # never onto one still to move
        old, moved = root / rel, moves[rel]
        if _tracked(root, old):
            subprocess.run(["git", "-C", root, "mv", old, moved], check=True)
        else:
            old.rename(moved)
        done.append(f"{rel} -> {moved.name}")
    paths = [root / name for name in DOCUMENTS]
    paths += [p for f in FOLDERS for p in sorted((root / f).rglob("*"))]
    for path in paths:
        # Never through a link into another tree (a test's copy of the
        # lesson links scripts/ to the project's).
        if (
            path.suffix not in SUFFIXES
            or not path.is_file()
            or not path.resolve().is_relative_to(root.resolve())
        ):
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if (changed := readdress(text)) != text:
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
        deck = read_deck(root, parts=read_settings(root).parts)
        done = apply(deck, plan(deck, args.slide))
    except (RenumberError, SettingsError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(done) or "nothing to move: no slide has that number")
    # The moved slides are staged (git mv); the new one is not yet.
    slide = (root / args.slide).resolve()  # as given, or under --root
    if (root / ".git").exists() and not _tracked(root, slide):
        print(f"git add {slide.relative_to(root)}  (the new slide)")
    print("now: make build (snippets keep their names; rename one with its")
    print("includes if you like)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
