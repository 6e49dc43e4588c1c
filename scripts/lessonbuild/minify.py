"""mkdocs-minify-plugin, remembering the pages it minified.

The ``minify`` plugin runs htmlmin, pure Python, over every page of
every build: 1.7 s of a 5 s rebuild under ``mkdocs serve``, where an
edit changes one page. This subclass (``- lesson-minify:`` in
mkdocs.yml, same options) hands back the minified text of a page whose
HTML is the same as in the previous build; the text minified is the
same, so the output is too. It keeps only what the last build used, so
memory stays at one site's pages.
"""

from __future__ import annotations

import hashlib

from mkdocs_minify_plugin.plugin import MinifyPlugin


class KeptMinifyPlugin(MinifyPlugin):
    def __init__(self):
        super().__init__()
        self._previous: dict[bytes, str] = {}
        self._current: dict[bytes, str] = {}
        self._assets: dict[tuple, str] = {}  # the few assets, all kept

    def on_startup(self, *, command, dirty):
        """Defined so that MkDocs keeps this instance across rebuilds."""

    def on_pre_build(self, *, config):
        # A build that stopped before its pages (a failed check) used
        # nothing: the pages of the build before it stay kept.
        self._previous = self._current or self._previous
        self._current = {}
        return super().on_pre_build(config=config)

    def _minify_file_data_with_func(self, file_data, minify_func):
        # The site's JavaScript and CSS, minified again on every build:
        # the same text gives the same result.
        digest = hashlib.sha256(file_data.encode()).digest()
        key = (minify_func.__name__, digest)
        done = self._assets.get(key)
        if done is None:
            done = super()._minify_file_data_with_func(file_data, minify_func)
            self._assets[key] = done
        return done

    def _minify_html_page(self, output):
        if not self.config["minify_html"] or output is None:
            return super()._minify_html_page(output)
        key = hashlib.sha256(output.encode("utf-8")).digest()
        done = self._current.get(key) or self._previous.get(key)
        if done is None:
            done = super()._minify_html_page(output)
        self._current[key] = done
        return done
