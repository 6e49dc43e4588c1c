"""``python -m lessonbuild.fastcheck [files...]``: checks that run no code.

A commit hook must answer in a second, so this runs only the checks that
read files: the deck's front matter and structure (``lessonbuild.deck``),
Python typed into a page instead of included from ``snippets/``, missing
includes and Output blocks with no code above them (the engine's plan,
which runs nothing), and every ``exercise`` fence's YAML
(``lessonbuild.exercises.validate``), and every reference by id
(``lessonbuild.exercises.refs``). Snippets are not run, so drift and
the contents of generated tables are left to ``make check-outputs`` and
the build.

With file arguments, only problems in those files are reported (an
editor's "check this file"); without, the whole deck. Exit 1 with
``file:line: message`` lines when anything is wrong, 2 on bad settings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .deck import read_deck
from .engine.check import plan
from .exercises import RefIndex, TablesUnavailable, validate
from .problems import Problem, report
from .settings import SettingsError, read_settings

#: Fill-in and bucket exercises name a table that only a snippet run
#: produces; their table checks are the build's, not this hook's.
_NO_TABLES = "fast checks run no snippets"


def _no_tables():
    raise TablesUnavailable(_NO_TABLES)


def exercise_problems(deck) -> list[Problem]:
    """Every exercise fence's YAML validated, without generated tables."""
    problems = []
    for page in deck.pages:
        for fence in page.exercises:
            if fence.end is None:
                problems.append(
                    Problem(
                        page.path,
                        fence.line,
                        "this ```exercise fence is never closed; expected "
                        "a closing ``` line after its YAML",
                    )
                )
                continue
            _, found = validate(
                fence.body,
                path=page.path,
                first_line=fence.line,
                tables=_no_tables,
            )
            problems += [p for p in found if _NO_TABLES not in p.message]
    return problems


def fast_problems(root: Path) -> list[Problem]:
    """Every problem the fast checks find in the site at ``root``."""
    settings = read_settings(root)
    deck = read_deck(root, parts=settings.parts)
    problems = list(deck.problems)
    plan(deck, problems)
    problems += exercise_problems(deck)
    # The pages' templates, raw HTML and titles (issue 31), as the build.
    from .engine import markup
    from .macros import template_problems

    for page in deck.pages:
        problems += template_problems(page) + markup.page_problems(page)
    problems += RefIndex.from_deck(deck).check(deck)  # {{ ref(...) }}
    return sorted(problems, key=lambda p: (p.path, p.line))


def _only(problems: list[Problem], files: list[str], root: Path):
    """The problems located in ``files`` (paths as given or absolute)."""
    wanted = set()
    for name in files:
        path = Path(name).resolve()
        try:
            wanted.add(path.relative_to(root).as_posix())
        except ValueError:
            wanted.add(name)
    return [p for p in problems if p.path in wanted]


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
        help="the site's root: mkdocs.yml, docs/, snippets/ (default: .)",
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
    if args.files:
        problems = _only(problems, args.files, root)
    if problems:
        print(report(problems), file=sys.stderr)
        return 1
    pages = sum(1 for _ in (root / "docs").rglob("*.md"))
    print(
        f"fastcheck: {pages} page{'' if pages == 1 else 's'}, no problems "
        "(front matter, inline "
        f"Python, includes, exercise YAML; no snippet run) in "
        f"{time.perf_counter() - started:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
