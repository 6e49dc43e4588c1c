"""``lessonbuild/private.py``, the one place that uses another project's
undocumented names, still does what it says with the installed version;
else this fails, naming that version."""

from __future__ import annotations

import json
from importlib.metadata import version
from types import SimpleNamespace

from material.plugins.search.plugin import SearchIndex, SearchPlugin

from lessonbuild import private

INSTALLED = version("mkdocs-material")
CHANGED = (
    f"mkdocs-material {INSTALLED} (private.py was written for "
    f"{private.MATERIAL}) changed its search plugin's undocumented "
    "search_index.entries / search_index_prev: update private.py and "
    "private.MATERIAL"
)


def _entry(location: str) -> dict:
    return {"location": location, "title": location, "text": ""}


def test_the_index_material_writes_is_the_one_handed_to_it():
    """Under serve --dirty, Material merges a build's entries into the
    previous build's; after ``set_search_entries`` it writes exactly the
    entries given, in their order, none twice."""
    assert INSTALLED == private.MATERIAL, CHANGED
    search = SearchPlugin()
    errors, _ = search.load_config({})
    assert not errors
    search.on_startup(command="serve", dirty=True)
    search.search_index = SearchIndex(**search.config)
    search.search_index.entries = [_entry("b.html")]  # this build's
    search.search_index_prev = SearchIndex(**search.config)
    search.search_index_prev.entries = [_entry("a.html"), _entry("b.html")]
    config = SimpleNamespace(plugins={private.SEARCH: search})
    assert private.search_entries(config) == [_entry("b.html")], CHANGED
    whole = [_entry("a.html"), _entry("b.html"), _entry("c.html")]
    private.set_search_entries(config, whole)
    written = search.search_index.generate_search_index(
        search.search_index_prev
    )
    assert json.loads(written)["docs"] == whole, CHANGED


def test_no_search_plugin_means_no_entries():
    config = SimpleNamespace(plugins={})
    assert private.search_entries(config) == []
    private.set_search_entries(config, [_entry("a.html")])  # no error
