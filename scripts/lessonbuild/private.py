"""The one place that uses another project's undocumented names.

Material's search plugin keeps a build's index entries in
``search_index.entries``; under ``mkdocs serve --dirty`` it merges them
into the previous build's (``search_index_prev``) itself, assuming that
one page changed. ``rebuild.Rebuild`` renders any number of pages, so
it hands Material the whole index, in page order, and clears the
previous one. Nothing public does this. tests/test_private.py fails,
naming the installed version, as soon as Material changes these names.
"""

from __future__ import annotations

SEARCH = "material/search"
#: The mkdocs-material release these names were read in.
MATERIAL = "9.8.1"


def search_entries(config) -> list[dict]:
    """This build's search index entries (none without the plugin)."""
    index = _index(config)
    return [] if index is None else index.entries


def set_search_entries(config, entries: list[dict]) -> None:
    """Make ``entries`` the whole index Material writes."""
    index = _index(config)
    if index is not None:
        index.entries = entries
        config.plugins[SEARCH].search_index_prev = None


def _index(config):
    """Material's index of this build; None without search (or before
    its ``on_config`` made one)."""
    search = config.plugins.get(SEARCH)
    return getattr(search, "search_index", None)
