"""``python -m lessonbuild.fastcheck [files...]``: checks that run no code.

A commit hook must answer in a second, so only the checks that read
files run: front matter, inline Python, includes and Output blocks (the
engine's plan), templates, exercise YAML and references. Drift and
tables are ``make check-outputs``' and the build's. With files given,
only their problems are reported. Exit 1 with ``file:line: message``
lines, 2 on bad settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .deck import read_deck
from .engine import markup
from .engine.check import plan
from .exercises import UNCLOSED, RefIndex, TablesUnavailable, validate
from .macros import template_problems
from .problems import Problem, report
from .settings import SettingsError, read_settings

#: Fill-in and bucket exercises name a table only a snippet run makes:
#: their table checks are the build's.
_NO_TABLES = "fast checks run no snippets"


def _no_tables():
    raise TablesUnavailable(_NO_TABLES)


def fast_problems(root: Path) -> list[Problem]:
    """Every problem the fast checks find in the site at ``root``."""
    deck = read_deck(root, parts=read_settings(root).parts)
    problems = list(deck.problems)
    plan(deck, problems)
    for page in deck.pages:
        problems += template_problems(page) + markup.page_problems(page)
        for fence in page.exercises:
            if fence.end is None:
                problems.append(Problem(page.path, fence.line, UNCLOSED))
                continue
            _, found = validate(
                fence.body,
                path=page.path,
                first_line=fence.line,
                tables=_no_tables,
            )
            problems += [p for p in found if _NO_TABLES not in p.message]
    problems += RefIndex.from_deck(deck).check(deck)  # {{ ref(...) }}
    return sorted(problems, key=lambda p: (p.path, p.line))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild.fastcheck",
        description="Front matter, inline Python, includes and exercise "
        "YAML, without running any snippet.",
    )
    parser.add_argument(
        "files", nargs="*", help="report only problems in these files"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the site's root (default: .)",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "docs").is_dir():
        print(f"error: {args.root}/docs is not a folder", file=sys.stderr)
        return 2
    started = time.perf_counter()
    try:
        problems = fast_problems(root)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.files:  # as given, or absolute
        wanted = set(args.files)
        for name in args.files:
            path = Path(name).resolve()
            if path.is_relative_to(root):
                wanted.add(path.relative_to(root).as_posix())
        problems = [p for p in problems if p.path in wanted]
    if problems:
        print(report(problems), file=sys.stderr)
        return 1
    pages = sum(1 for _ in (root / "docs").rglob("*.md"))
    seconds = time.perf_counter() - started
    print(
        f"fastcheck: {pages} page{'' if pages == 1 else 's'}, no problems "
        "(front matter, inline Python, includes, exercise YAML; no "
        f"snippet run) in {seconds:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
