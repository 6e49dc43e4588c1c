"""The one place that uses another project's undocumented names: under
``serve --dirty`` Material merges a build's search entries into the last
build's, assuming one page changed; ``rebuild.Rebuild`` renders any
number, so it hands Material the whole index (tests/test_private.py)."""

from __future__ import annotations

SEARCH = "material/search"
MATERIAL = "9.8.1"  # the mkdocs-material these names were read in


def _index(config):
    """This build's index; None without search (or before its on_config)."""
    return getattr(config.plugins.get(SEARCH), "search_index", None)


def search_entries(config) -> list[dict]:
    index = _index(config)
    return [] if index is None else index.entries


def set_search_entries(config, entries: list[dict]) -> None:
    """Make ``entries`` the whole index Material writes."""
    if (index := _index(config)) is not None:
        index.entries = entries
        config.plugins[SEARCH].search_index_prev = None
