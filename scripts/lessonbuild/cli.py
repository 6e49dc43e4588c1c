"""``python -m lessonbuild check|update|bench``: the build's checks
without MkDocs (``update`` also rewrites drifted Output blocks); bad
settings exit 2 with a message, never a traceback."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import engine
from .deck import read_deck
from .problems import report
from .settings import Settings, SettingsError, cache_dir, read_settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild",
        description="Run every snippet the slides include and compare "
        "its output with the slide's Output block.",
    )
    parser.add_argument(
        "command",
        choices=["check", "update", "bench"],
        help="check: report problems (exit 1 if any); update: also "
        "rewrite drifted Output blocks; bench: time the engine and build",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the site's root: mkdocs.yml, docs/, snippets/ (default: .)",
    )
    parser.add_argument(
        "--timeout",
        help=f"{Settings.help('snippet_timeout')} (default: "
        "$SNIPPET_TIMEOUT, else snippet_timeout of the lesson plugin in "
        f"mkdocs.yml, else {Settings().snippet_timeout:g})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        help=f"{Settings.help('jobs')} (default: $SNIPPET_JOBS, else jobs "
        "of the lesson plugin in mkdocs.yml)",
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-dir",
        type=Path,
        help="cache folder (default: $SNIPPET_CACHE_DIR, else "
        "ROOT/.cache/engine)",
    )
    cache.add_argument(
        "--no-cache", action="store_true", help="run every snippet"
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "docs").is_dir():
        print(f"error: {args.root}/docs is not a folder", file=sys.stderr)
        return 2
    try:
        settings = read_settings(root)
        timeout = settings.timeout(args.timeout)
        jobs = settings.job_count(args.jobs)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "bench":
        from .bench import bench

        return bench(root)
    deck = read_deck(root, parts=settings.parts)
    run = engine.update if args.command == "update" else engine.check
    result = run(
        deck,
        timeout=timeout,
        jobs=jobs,
        output_limits=settings.output_limits(),
        cache_dir=None if args.no_cache else cache_dir(root, args.cache_dir),
    )
    for line in result.updated:
        print(line)
    problems = deck.problems + result.problems
    # The report's count (the deck's problems too) is the last word.
    print(result.summary(), file=sys.stderr if problems else sys.stdout)
    if problems:
        print(report(problems), file=sys.stderr)
    return 1 if problems else 0
