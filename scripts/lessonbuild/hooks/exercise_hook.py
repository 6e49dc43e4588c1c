"""MkDocs adapter for lessonbuild.exercises: ```exercise fences -> widgets.

Thin on purpose: all parsing, validation and rendering is plain Python in
scripts/lessonbuild/exercises/. Here we only

- turn each page's fences into placeholders (on_page_markdown) and put
  the rendered widgets in their place (on_page_content);
- hand fill-in exercises the snippet engine's tables, imported lazily
  (the engine hook runs before this one);
- collect every problem of every page and fail the build once, in
  on_env: that is after all pages are read but before MkDocs writes a
  single file, so a broken build leaves an empty site/ rather than a
  half-built one that looks fine.
"""

from __future__ import annotations

import os
import sys

from mkdocs.exceptions import PluginError

try:
    import lessonbuild.exercises as exercises
except ImportError:  # not installed with `pip install -e .`
    sys.path.insert(
        0,
        os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        ),
    )
    import lessonbuild.exercises as exercises

# localStorage keys are "<prefix>:<page url>:<n or id>".
STORAGE_PREFIX = "lesson81"

_state: dict = {}


def _reset(config) -> None:
    _state.clear()
    _state["problems"] = []
    _state["stash"] = {}
    _state["fragments"] = exercises.Fragments(
        config["markdown_extensions"], config["mdx_configs"]
    )


def on_config(config):
    _reset(config)
    return config


def _tables(config):
    """The generated tables, loaded on first use and kept for the build.

    The snippet engine's hook has already run every snippet (it runs
    first, in on_config), so this reads its result.
    """
    if "tables" not in _state:
        override = exercises.table_override()
        if override is not None:
            _state["tables"] = override
        else:
            _state["tables"] = _engine_tables(config)
    tables = _state["tables"]
    if isinstance(tables, Exception):
        raise tables
    return tables


def _engine_tables(config):
    try:
        from lessonbuild.engine import current_tables
    except ImportError as exc:
        return exercises.TablesUnavailable(
            f"cannot import lessonbuild.engine.current_tables: {exc}"
        )
    try:
        return current_tables(_root(config))
    except Exception as exc:  # the engine reports its own problems
        first = str(exc).strip().splitlines()[:1] or [type(exc).__name__]
        return exercises.TablesUnavailable(
            f"the snippet engine failed: {first[0]}"
        )


def _root(config) -> str:
    return os.path.dirname(os.path.abspath(config.config_file_path or "."))


def _display_path(page, config) -> str:
    src = page.file.abs_src_path
    if not src:
        return page.file.src_uri
    return os.path.relpath(src, _root(config))


def on_page_markdown(markdown, page, config, files):
    if "fragments" not in _state:
        _reset(config)
    if not page.file.src_uri.endswith(".md"):
        return markdown
    try:
        source = page.file.content_string
    except OSError:
        source = None
    result = exercises.transform_page(
        markdown,
        path=_display_path(page, config),
        url=page.url or "index.html",
        source=source,
        tables=lambda: _tables(config),
        fragments=_state["fragments"],
        key_prefix=STORAGE_PREFIX,
    )
    _state["problems"].extend(result.problems)
    _state["stash"][page.file.src_uri] = result.html
    return result.markdown


def on_page_content(html, page, config, files):
    stash = _state.get("stash", {}).pop(page.file.src_uri, None)
    if not stash:
        return html
    html, missing = exercises.fill_placeholders(html, stash)
    for _token in missing:
        _state["problems"].append(
            f"{_display_path(page, config)}: an exercise lost its place "
            "while the page rendered; expected each ```exercise fence on "
            "lines of its own"
        )
    return html


def on_env(env, config, files):
    problems = _state.get("problems", [])
    if problems:
        count = len(problems)
        noun = "problem" if count == 1 else "problems"
        raise PluginError(
            f"{count} exercise {noun} (nothing was written to the site):\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    return env
