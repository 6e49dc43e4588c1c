"""The snippet engine: run snippets, check Output blocks, collect tables.

It consumes the ``Deck`` that ``lessonbuild.deck`` read and parses
nothing itself. Importing this package never imports torch: only a run of
a snippet whose result is not cached starts the fork servers that do.

- ``check`` (check.py): plan, refuse printed set order (lint.py), run
  (runner.py + server.py, through cache.py), judge (judge.py), compare
  (outputs.py), tables and values (tables.py).
- Trust (issue 14): snippets run with the repository mounted read-only
  (server.py), under fixed hash seeds 0 and 1 (runner.py), each in its
  own process group with the server as subreaper, everything they
  started killed after each run; the cache records every file a
  snippet opened and a checksum (cache.py); outputs are bounded.
  A build may let the second runs (seed 1) go on while it renders its
  pages (``check(defer_second=True)``, ``Result.finish``): the verdict
  and the cache are the same, only later.
- ``update``: the same, then rewrite the drifted Output blocks.
"""

from .check import ACCEPT, Result, check, prestart, update, used_snippets
from .tables import render_table

__all__ = [
    "ACCEPT",
    "Result",
    "check",
    "prestart",
    "render_table",
    "update",
    "used_snippets",
]
