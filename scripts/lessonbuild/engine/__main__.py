"""``python -m lessonbuild.engine check|update|bench [options]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import engine


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lessonbuild.engine",
        description="Run every snippet the slides include and compare "
        "its output with the slide's Output block.",
    )
    parser.add_argument(
        "command",
        choices=["check", "update", "bench"],
        help="check: report problems (exit 1 if any); update: also "
        "rewrite drifted Output blocks; bench: time cold, warm and "
        "baseline runs",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the site's root: docs/, snippets/ (default: .)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds a snippet may run (default: ${engine.TIMEOUT_ENV}, "
        f"else extra.{engine.TIMEOUT_EXTRA} in mkdocs.yml, else "
        f"{engine.DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="snippets run at once (default: the number of cores)",
    )
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help=f"cache folder (default: ${engine.CACHE_ENV}, else "
        "ROOT/.cache/engine)",
    )
    cache.add_argument(
        "--no-cache", action="store_true", help="run every snippet"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not (args.root / "docs").is_dir():
        print(f"error: {args.root}/docs is not a folder", file=sys.stderr)
        return 2
    options = {
        "timeout": args.timeout,
        "jobs": args.jobs,
        "cache_dir": False if args.no_cache else (args.cache_dir or True),
    }
    try:
        engine.resolve_timeout(args.timeout, args.root)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.command == "bench":
        from .bench import bench

        return bench(args.root, jobs=args.jobs, timeout=args.timeout)
    if args.command == "update":
        result = engine.update(args.root, **options)
        for line in result.updated:
            print(line)
    else:
        result = engine.check(args.root, **options)
    if result.problems:
        print(result.report(), file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
