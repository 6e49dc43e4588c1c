"""The snippet engine: run snippets, check Output blocks, collect tables.

It reads no slide (it takes ``lessonbuild.deck``'s ``Deck``) and never
imports torch (the fork servers of an uncached run do). ``check``
(check.py) plans, lints (lint.py), runs (runner.py, server.py) through
the cache (cache.py), judges (judge.py), compares (outputs.py) and
collects tables (tables.py); ``update`` rewrites the drifted blocks.
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
