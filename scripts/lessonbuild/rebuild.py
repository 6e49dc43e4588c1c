"""Which pages a ``mkdocs serve --dirty`` rebuild renders: those whose
key (a hash of all a page is made of and all every page shows) changed.

MkDocs' own ``--dirty`` compares a page's output with its file, wrong
where a page is made of more (its snippets, their tables); a full
rebuild takes 2.4 s here. ``plan`` (on_nav) deletes the output of a page
to render and touches a kept one's; ``restore`` (on_env) gives a kept
page what its last render left on it; ``record`` (on_page_context)
keeps that; ``finish`` (on_post_build) completes the search index. A
changed notebook keeps its last render and asks for one more rebuild;
a failed build forgets every key. The site is a clean build's, byte for
byte (tests/test_rebuild.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import private
from .settings import read_mkdocs_yml


def _not_dirty_warning(record: logging.LogRecord) -> bool:
    """MkDocs warns of every dirty build, which ``Rebuild`` makes
    accurate (under ``strict: true`` the warning would fail it)."""
    dirty = "A 'dirty' build is being performed"
    return not record.getMessage().startswith(dirty)


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
        self.keys: dict[str, str] = {}  # this build: src_uri -> key
        self.skipped: set[str] = set()
        self.deferred: dict[str, str] = {}  # src_uri -> key deferred
        self.rendered: set[str] = set()
        self._shared = self._published = ""  # this build's, from plan
        # (A function: added again, it is there once.)
        logger = logging.getLogger("mkdocs.commands.build")
        logger.addFilter(_not_dirty_warning)

    def plan(self, build, config, files) -> None:
        """Decide which pages this build renders."""
        pending = ()  # homework notebooks still being written: rendered
        if homework := build.homework:
            pending = set(homework.uris) - set(homework.written)
        self._shared = _shared_key(build, config, files)
        self._published = _published_key(build)
        self.keys, self.skipped, self.rendered = {}, set(), set()
        deferred = {}
        for file in files.documentation_pages():
            uri, dest = file.src_uri, file.abs_dest_path
            key = self.keys[uri] = self._page_key(build, file)
            last, exists = self.renders.get(uri), os.path.isfile(dest)
            keep = last is not None and uri not in pending and exists
            if keep and last.key != key:  # a notebook: once per change
                keep = uri.endswith(".ipynb") and self.deferred.get(uri) != key
                if keep:
                    deferred[uri] = key
            if keep:
                self.skipped.add(uri)
                if file.is_modified():  # its source was written again
                    os.utime(dest)  # now newer: MkDocs skips it
                # MkDocs asks twice, reading the pages and rendering them:
                # a save in between would render a page it never read.
                # Kept for this build; the watcher's next rebuild sees it.
                file.is_modified = lambda: False
            elif exists:
                os.unlink(dest)  # no output: MkDocs renders it
        self.deferred = deferred

    def rekey(self, build, file) -> None:
        """A pending page's key once its file is written (``plan`` hashed
        what it held before: the next rebuild would render it again)."""
        self.keys[file.src_uri] = self._page_key(build, file)

    def _page_key(self, build, file) -> str:
        """What one page is made of, besides what all share."""
        h = hashlib.sha256(self._shared.encode())
        uri = file.src_uri
        text = build.sources.get(uri)
        h.update(_read(file.abs_src_path) if text is None else text.encode())
        h.update(json.dumps(build.widgets.get(uri), sort_keys=True).encode())
        slide = build.deck.page_at(uri) if build.deck is not None else None
        if slide is not None:
            for include in slide.includes:
                h.update(include.path.encode() + b"\0")
                h.update(_read(build.deck.root / include.path))
            if "{{" in slide.text:  # a macro may show any published data
                h.update(self._published.encode())
        return h.hexdigest()

    def restore(self, files) -> None:
        """Give each skipped page what its last render left on it."""
        for file in files.documentation_pages():
            if file.src_uri in self.skipped and file.page is not None:
                last, page = self.renders[file.src_uri], file.page
                page.meta, page.title = dict(last.meta), last.title
                page.toc, page.present_anchor_ids = last.toc, last.anchors

    def record(self, page) -> None:
        uri = page.file.src_uri
        self.rendered.add(uri)
        self.renders[uri] = _Render(
            self.keys.get(uri, ""),
            page.file.abs_dest_path,
            page.url,
            page.title,
            dict(page.meta),
            page.toc,
            page.present_anchor_ids,
        )

    def finish(self, config, failure_html: str | None) -> bool:
        """Complete the search index, drop deleted pages' HTML; after a
        failure the skipped pages show ``failure_html`` too. True: a page
        was deferred, ask for one more rebuild."""
        fresh: dict[str, list] = {}
        for entry in private.search_entries(config):
            fresh.setdefault(entry["location"].split("#")[0], []).append(entry)
        merged = []
        for uri in self.keys:  # the build's page order
            if (last := self.renders.get(uri)) is not None:
                if uri in self.rendered:
                    last.search = fresh.get(last.url, [])
                merged += last.search
        private.set_search_entries(config, merged)
        site = Path(config.site_dir).resolve()
        for uri in set(self.renders) - set(self.keys):  # deleted pages
            path = Path(self.renders.pop(uri).dest).resolve()
            if path.is_relative_to(site):
                path.unlink(missing_ok=True)
        if failure_html is None:
            return bool(self.deferred)
        for uri in self.skipped:
            Path(self.renders[uri].dest).write_text(
                failure_html, encoding="utf-8"
            )
        self.forget()
        return False

    def forget(self) -> None:
        """Render every page next time (a failed build, or an error)."""
        self.renders, self.deferred = {}, {}


def _shared_key(build, config, files) -> str:
    """What every page is made of or shows, and whether the build failed."""
    h = hashlib.sha256()
    mkdocs_yml = read_mkdocs_yml(Path(config.config_file_path))
    h.update(json.dumps(mkdocs_yml, sort_keys=True, default=repr).encode())
    if config.theme.custom_dir:
        _hash_tree(h, Path(config.theme.custom_dir), content=True)
    _hash_tree(h, Path(__file__).parent, content=False)
    for file in sorted(files, key=lambda f: f.src_uri):
        h.update(f"{file.src_uri}\0{file.dest_uri}\0".encode())
    pages = [(p.path, p.meta) for p in build.deck.pages] if build.deck else []
    shown = [config.nav, dict(config.extra), pages, build.failure]
    h.update(json.dumps(shown, default=repr).encode())
    return h.hexdigest()


def _published_key(build) -> str:
    """The tables, values and figures the snippets published."""
    if (result := build.result) is None:
        return ""
    published = [result.tables, result.values, result.figures]
    text = json.dumps(published, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _hash_tree(h, folder: Path, *, content: bool) -> None:
    """Each file's bytes, or (code, changed only by saving) size and time."""
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
        return Path(path).read_bytes()
    except OSError:
        return b"\0missing"
