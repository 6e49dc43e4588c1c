"""The snippet engine: run snippets, check Output blocks, collect tables.

It consumes the ``Deck`` that ``lessonbuild.deck`` read and parses
nothing itself; importing it never imports torch (only a run that is not
cached starts the fork servers that do). ``check`` (check.py) plans,
refuses printed set order (lint.py), runs (runner.py, server.py: the
sandbox, fixed hash seeds 0 and 1) through the cache (cache.py), judges
(judge.py), compares (outputs.py) and collects tables and values
(tables.py); ``update`` then rewrites the drifted Output blocks.
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
