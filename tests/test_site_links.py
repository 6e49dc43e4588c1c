"""Every link and image of every built page reaches something.

A link in raw HTML (a macro's table, a template) is one MkDocs does not
rewrite from ``.md`` to ``.html``; a typo in one is a 404 for a student.
Read as text: the attributes of every page of the site, relative ones
resolved against the page, root-relative ones (404.html's, which
MkDocs writes from ``site_url``) against the site.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

ATTRIBUTE = re.compile(r'\s(?:href|src)="([^"]*)"')
ID = re.compile(r'\sid="([^"]+)"')


CANONICAL = re.compile(r'<link rel="canonical" href="([^"]*)"')


def _root_path(site: Path) -> str:
    """The path the site is served under: "/" for a local build, "/REPO/"
    for the Pages build (``SITE_URL``: the home page's canonical link),
    which 404.html's root-relative links start with."""
    found = CANONICAL.search((site / "index.html").read_text("utf-8"))
    return urlsplit(found[1]).path.rsplit("/", 1)[0] + "/" if found else "/"


def _target(
    site: Path, page: Path, url: str, root: str = "/"
) -> tuple[Path, str] | None:
    """(file, anchor) a link names in the site, or None for one that
    leaves it (another scheme, a bare anchor, a protocol-relative URL).
    ``root``: the path a root-relative link starts with (_root_path)."""
    parts = urlsplit(html.unescape(url))
    if parts.scheme or url.startswith("//") or not parts.path:
        return None
    path = unquote(parts.path)
    if path.startswith(root):
        path = "/" + path[len(root) :]
    base = site if path.startswith("/") else page.parent
    target = base / path.lstrip("/")
    if path.endswith("/"):
        target = target / "index.html"
    return target, parts.fragment


def test_every_link_and_image_of_the_site_resolves(built_site):
    ids: dict[Path, set[str]] = {}
    broken = []
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 55
    root = _root_path(built_site)
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        for url in ATTRIBUTE.findall(text):
            found = _target(built_site, page, url, root)
            if found is None:
                continue
            target, anchor = found
            where = f"{page.relative_to(built_site)}: {url}"
            if not target.is_file():
                broken.append(where)
            # "#/15" is the deck's route to a screen (reveal.js), not an id.
            elif (
                anchor
                and not anchor.startswith("/")
                and (target.suffix == ".html")
            ):
                if target not in ids:
                    body = target.read_text(encoding="utf-8", errors="replace")
                    ids[target] = set(ID.findall(body))
                if anchor not in ids[target]:
                    broken.append(f"{where} (no such id)")
    assert not broken, f"{len(broken)} broken: " + "\n".join(broken[:30])


def test_a_code_line_is_cited_by_its_id_not_an_empty_link(built_site):
    """pymdownx gives each code line an anchor with ``id``, ``name`` and
    a ``href`` to itself; with no line numbers shown there is nothing to
    click, so only the id (what a citation's ``#__codelineno-…`` needs)
    is kept: bytes of every code block, on the page-weight budget."""
    anchors = extra = 0
    for page in sorted((built_site / "slides").glob("*.html")):
        text = page.read_text(encoding="utf-8")
        anchors += len(re.findall(r'<a id="__codelineno-[\w-]+"></a>', text))
        extra += len(re.findall(r'(?:href="#|name=")__codelineno-', text))
    assert anchors > 100, "the slides' code lines lost their anchors"
    assert extra == 0, f"{extra} code-line anchors still carry href or name"
