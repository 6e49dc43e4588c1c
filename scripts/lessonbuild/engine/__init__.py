"""The snippet engine: ``check`` (check.py) plans, lints (lint.py), runs
(runner.py, server.py) through the cache (cache.py), judges (judge.py),
compares (outputs.py) and collects tables (tables.py); ``update``
rewrites drifted blocks. It reads no slide (it takes ``deck.Deck``) and
never imports torch (the fork servers of an uncached run do)."""

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
