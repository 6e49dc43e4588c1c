"""The theme's Jinja environments, quicker to make again.

MkDocs makes a fresh Jinja environment (``Theme.get_env``) for every
build, and Material's search plugin makes more, for its translations.
Each compiled again every template it rendered, and each build walked
the theme's 14,500 files (Material's icons) to find its static files.
Under ``mkdocs serve`` that was 0.2 s of every rebuild. ``keep`` makes
every environment of one config:

- read compiled templates from a folder (Jinja's bytecode cache, keyed
  by each template's source: an edited template compiles again);
- list an installed theme folder once per process (a package does not
  change under a running server), and the project's own ``custom_dir``
  afresh every time. Paths with a hidden part (``.icons/``) are left out
  of the list, as MkDocs' ``add_files_from_theme``, the one caller of
  ``list_templates``, leaves them out; loading them is unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import jinja2


def keep(config, folder: Path, listings: dict[str, list[str]]) -> None:
    """Wrap ``config.theme.get_env``; ``listings`` (kept by the caller
    across rebuilds) holds the installed folders' lists."""
    theme = config.theme
    make = theme.get_env
    custom = os.path.realpath(theme.custom_dir) if theme.custom_dir else None

    def get_env() -> jinja2.Environment:
        env = make()
        loader = env.loader
        if isinstance(loader, jinja2.FileSystemLoader):
            env.loader = _ListingLoader(
                loader.searchpath,
                loader.encoding,
                loader.followlinks,
                fresh=custom,
                listings=listings,
            )
        try:
            folder.mkdir(parents=True, exist_ok=True)
            env.bytecode_cache = jinja2.FileSystemBytecodeCache(str(folder))
        except OSError:
            pass  # no cache folder: compile, as MkDocs does
        return env

    theme.get_env = get_env


class _ListingLoader(jinja2.FileSystemLoader):
    def __init__(self, searchpath, encoding, followlinks, *, fresh, listings):
        super().__init__(searchpath, encoding, followlinks)
        self._fresh = fresh
        self._listings = listings

    def list_templates(self) -> list[str]:
        found: set[str] = set()
        for searchpath in self.searchpath:
            if os.path.realpath(searchpath) == self._fresh:
                found.update(self._walk(searchpath))
                continue
            listed = self._listings.get(searchpath)
            if listed is None:
                listed = self._listings[searchpath] = self._walk(searchpath)
            found.update(listed)
        return sorted(found)

    def _walk(self, searchpath: str) -> list[str]:
        """The files under ``searchpath`` as template names, without the
        hidden ones (and without walking hidden folders)."""
        out = []
        for dirpath, dirnames, filenames in os.walk(
            searchpath, followlinks=self.followlinks
        ):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            rel = os.path.relpath(dirpath, searchpath)
            for name in filenames:
                if name.startswith("."):
                    continue
                path = name if rel == "." else os.path.join(rel, name)
                out.append(path.replace(os.path.sep, "/"))
        return out
