"""Which pages a ``mkdocs serve --dirty`` rebuild renders: those an edit
changed, judged from what each page is made of.

MkDocs renders every page on every rebuild (2.4 s for this lesson, where
an edit changes one page). With ``--dirty`` it renders only the pages
whose ``File.is_modified()`` holds, judged from file times alone: wrong
here, where a page is made of more than its file (the snippets it
includes, the tables they publish, every other page's title in its
nav), and MkDocs warns that such builds are inaccurate. ``Rebuild``
judges instead, so that a dirty rebuild writes the site a clean build
would, byte for byte (tests/test_rebuild.py):

1. ``plan`` (``on_nav``): each page's key hashes everything it is made
   of: its text as the deck serves it, its exercise widgets, every file
   it includes, the engine's tables, values and figures when it calls a
   macro, and what every page shares: the config files, the theme
   overrides, the lesson's code, the list of files. A page is rendered
   when its key is not the one its HTML was built with, or the HTML is
   gone.
2. ``restore`` (``on_env``): a skipped page gets back what its last
   render left on it (front matter, title, table of contents, anchors),
   so the nav and links of the pages rendered around it are right. If
   the nav changed after all (a title, a front matter key), every
   skipped page is rendered too.
3. ``record`` (``on_page_context``, after the search plugin): what the
   next rebuild restores.
4. ``finish`` (``on_post_build``, before the search plugin writes its
   index): the index gets every page's entries in page order, as a
   clean build writes it; a page that no longer exists loses its HTML.

A failed build forgets every key: the next one renders every page.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from .settings import config_files

#: MkDocs' warning on every dirty build, which ``Rebuild`` makes accurate
#: (under ``strict: true`` the warning alone would fail the rebuild).
DIRTY_WARNING = "A 'dirty' build is being performed"
SEARCH = "material/search"


class QuietDirtyWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(DIRTY_WARNING)

    @classmethod
    def install(cls) -> None:
        logger = logging.getLogger("mkdocs.commands.build")
        if not any(isinstance(f, cls) for f in logger.filters):
            logger.addFilter(cls())


@dataclass
class _Render:
    """What one page's render left on it, and where its HTML is."""

    key: str
    dest: str
    url: str
    title: str | None
    meta: dict
    toc: object
    anchors: set | None
    search: list = field(default_factory=list)


class Rebuild:
    def __init__(self):
        self.renders: dict[str, _Render] = {}  # src_uri -> last render
        self.nav: str | None = None  # the nav those renders showed
        self.keys: dict[str, str] = {}  # this build: src_uri -> key
        self.skipped: set[str] = set()
        self.deferred: dict[str, str] = {}  # src_uri -> key deferred
        self.rendered: set[str] = set()

    # --- 1. plan ---------------------------------------------------------

    def plan(self, plugin, config, files, pending=(), slow=None):
        """Decide, for each page, whether this build renders it; returns
        (the src_uris it renders, those it defers).

        ``pending``: pages whose file is still being written (the
        homework notebooks), always rendered. ``slow(file)``: whether a
        changed page would take long to render (a notebook not yet
        converted). Such a page is deferred: this build keeps its last
        render, so the slide an author edited shows at once, and the
        caller renders it in the background and asks for a rebuild,
        which renders it from mkdocs-jupyter's cache. A page is
        deferred once per change: if it is still slow the next time,
        that build renders it.
        """
        shared = _shared_key(plugin, config, files)
        published = _published_key(plugin)
        self.keys, self.skipped, self.rendered = {}, set(), set()
        deferred = set()
        for file in files.documentation_pages():
            uri = file.src_uri
            key = _page_key(shared, published, plugin, file)
            self.keys[uri] = key
            last = self.renders.get(uri)
            kept = last is not None and os.path.isfile(file.abs_dest_path)
            fresh = kept and last.key == key and uri not in pending
            if (
                not fresh
                and kept
                and slow is not None
                and self.deferred.get(uri) != key
                and uri not in pending
                and slow(file)
            ):
                deferred.add(uri)
                fresh = True  # for this build: its last render stays
            if fresh:
                self.skipped.add(uri)
            file.is_modified = _answer(not fresh)
        self.deferred = {uri: self.keys[uri] for uri in deferred}
        return set(self.keys) - self.skipped, deferred

    # --- 2. restore ---------------------------------------------------------

    def restore(self, config, files, nav) -> None:
        """Give each skipped page what its last render left on it; if
        the nav then differs from the one they were rendered with,
        render them too."""
        if not self.skipped:
            return
        pages = {f.src_uri: f.page for f in files.documentation_pages()}
        for uri in self.skipped:
            page, last = pages[uri], self.renders[uri]
            page.meta = dict(last.meta)
            page.title = last.title
            page.toc = last.toc
            page.present_anchor_ids = last.anchors
        if nav_signature(nav) == self.nav:
            return
        from mkdocs.commands.build import _populate_page

        for uri in sorted(self.skipped):
            pages[uri].file.is_modified = _answer(True)
            _populate_page(pages[uri], config, files)
        self.skipped, self.deferred = set(), {}

    # --- 3. record ---------------------------------------------------------

    def record(self, page) -> None:
        uri = page.file.src_uri
        self.rendered.add(uri)
        self.renders[uri] = _Render(
            key=self.keys.get(uri, ""),
            dest=page.file.abs_dest_path,
            url=page.url,
            title=page.title,
            meta=dict(page.meta),
            toc=page.toc,
            anchors=page.present_anchor_ids,
        )

    # --- 4. finish ---------------------------------------------------------

    def finish(self, config, nav, failure_html: str | None) -> None:
        """Complete the search index, drop the HTML of deleted pages, and
        keep the keys. After a failed build (``failure_html``, what its
        rendered pages show), the skipped pages show it too, and every
        key is forgotten."""
        search = config.plugins.get(SEARCH)
        if search is not None and getattr(search, "search_index", None):
            self._merge_search(search)
        for uri in set(self.renders) - set(self.keys):
            _remove(self.renders.pop(uri).dest, config.site_dir)
        self.nav = nav_signature(nav)
        if failure_html is not None:
            for uri in self.skipped:
                Path(self.renders[uri].dest).write_text(
                    failure_html, encoding="utf-8"
                )
            self.forget()

    def forget(self) -> None:
        """Render every page next time (a failed build, or an error)."""
        self.renders, self.nav, self.deferred = {}, None, {}

    def _merge_search(self, search) -> None:
        """The search index a clean build writes: each page's entries,
        in page order, the skipped pages' from their last render."""
        fresh: dict[str, list] = {}
        for entry in search.search_index.entries:
            fresh.setdefault(entry["location"].split("#")[0], []).append(entry)
        merged = []
        for uri in self.keys:  # the build's page order
            last = self.renders.get(uri)
            if last is None:
                continue
            if uri in self.rendered:
                last.search = fresh.get(last.url, [])
            merged += last.search
        search.search_index.entries = merged
        # Material merges a dirty build's one page into the previous
        # index itself; the index is whole already.
        search.search_index_prev = None


def _answer(value: bool):
    return lambda: value


def nav_signature(nav) -> str:
    """Everything of the nav that every page shows: titles, addresses,
    front matter (Material reads icons and status from it)."""

    def walk(items):
        out = []
        for item in items:
            if item.is_section:
                out.append(["s", item.title, walk(item.children)])
            elif item.is_page:
                out.append(["p", item.title, item.url, item.meta])
            else:
                out.append(["l", item.title, item.url])
        return out

    return json.dumps(walk(nav.items), sort_keys=True, default=repr)


def _shared_key(plugin, config, files) -> str:
    """What every page is made of: the config files, the theme
    overrides, the lesson's code, the site's files, the plugin's nav
    and extra values, and whether the build failed."""
    h = hashlib.sha256()
    for path in config_files(Path(config.config_file_path)):
        h.update(_read(path))
    custom = config.theme.custom_dir
    if custom:
        _hash_tree(h, Path(custom), content=True)
    _hash_tree(h, Path(__file__).parent, content=False)
    for file in sorted(files, key=lambda f: f.src_uri):
        h.update(f"{file.src_uri}\0{file.dest_uri}\0".encode())
    h.update(json.dumps(config.nav, default=repr).encode())
    h.update(json.dumps(dict(config.extra), default=repr).encode())
    h.update(repr(getattr(plugin, "failure", None)).encode())
    return h.hexdigest()


def _published_key(plugin) -> str:
    """The tables, values and figures the snippets published (a page
    that calls a macro may show any of them)."""
    result = plugin.result
    if result is None:
        return ""
    published = [result.tables, result.values, result.figures]
    text = json.dumps(published, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _page_key(shared: str, published: str, plugin, file) -> str:
    """What one page is made of, besides what all share."""
    h = hashlib.sha256(shared.encode())
    uri = file.src_uri
    text = plugin.sources.get(uri)
    if text is None:
        h.update(_read(file.abs_src_path))
    else:
        h.update(text.encode())
    h.update(json.dumps(plugin.widgets.get(uri), sort_keys=True).encode())
    slide = plugin.deck.page_at(uri) if plugin.deck is not None else None
    if slide is not None:
        for include in slide.includes:
            h.update(include.path.encode() + b"\0")
            h.update(_read(plugin.deck.root / include.path))
        if "{{" in slide.text:
            h.update(published.encode())
    return h.hexdigest()


def _hash_tree(h, folder: Path, *, content: bool) -> None:
    """Each file under ``folder``: its bytes, or (cheaper, for code that
    only changes by being saved) its size and time."""
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        if content:
            h.update(_read(path))
        else:
            stat = path.stat()
            h.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())


def _read(path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b"\0missing"


def _remove(dest: str, site_dir: str) -> None:
    """Remove a deleted page's HTML, only ever inside the site folder."""
    path = Path(dest).resolve()
    if path.is_relative_to(Path(site_dir).resolve()):
        path.unlink(missing_ok=True)
