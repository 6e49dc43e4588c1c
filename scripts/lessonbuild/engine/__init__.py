"""The snippet engine: run snippets, check Output blocks, collect tables.

It consumes the ``Deck`` that ``lessonbuild.deck`` read and parses
nothing itself. Importing this package never imports torch: only a run of
a snippet whose result is not cached starts the fork servers that do.

- ``check`` (check.py): plan, run (runner.py + server.py, through
  cache.py), judge (judge.py), compare (outputs.py), tables (tables.py).
- ``update``: the same, then rewrite the drifted Output blocks.
"""

from .check import ACCEPT, Result, check, update, used_snippets
from .tables import render_table

__all__ = [
    "ACCEPT",
    "Result",
    "check",
    "render_table",
    "update",
    "used_snippets",
]
