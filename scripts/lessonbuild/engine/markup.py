"""What a page's author may write as HTML, and what is data only.

MkDocs publishes a slide's raw HTML as it is: a ``<script>`` or an
``onclick`` would run in every student's browser. So raw HTML (not
code) is held to an allow-list (CONTRIBUTING.md names it), links go to
the site or the web, a title is plain text, and a docs file may not be
a symbolic link out of the repository (one to /proc/self/environ would
publish the build's environment).
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

from ..problems import Problem

#: Tags a page may write as raw HTML.
TAGS = {
    "a", "abbr", "b", "br", "code", "details", "div", "em", "figcaption",
    "figure", "i", "kbd", "mark", "p", "section", "small", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "th", "thead", "tr",
}  # fmt: skip
#: Attributes those tags may carry.
ATTRIBUTES = {"class", "id", "href", "title", "download", "markdown", "lang"}
_SAFE_URL = re.compile(r"^(https?:|mailto:|#|[^:]*$)", re.I)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def page_problems(page) -> list[Problem]:
    """Raw HTML outside the allow-list, and a title that is not plain
    text, in one deck page."""
    problems = []
    title = page.meta.get("title") if isinstance(page.meta, dict) else None
    if isinstance(title, str) and re.search(r"[<>]", title):
        message = (
            f"title {title!r} holds '<' or '>': a title is plain text "
            "(HTML in it would run on the page); write it in words"
        )
        problems.append(Problem(page.path, page.line_of("title"), message))
    text, fence = [], None
    for line in page.lines:  # code blocks and inline code are text
        line = line.rstrip("\r\n")
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m[1][0]
            text.append("")
        elif fence is not None:
            if m and m[1][0] == fence:
                fence = None
            text.append("")
        else:
            text.append(_INLINE_CODE.sub(lambda c: " " * len(c[0]), line))
    checker = _Checker(page.path, problems)
    checker.feed("\n".join(text))
    checker.close()  # what is left unclosed at the end is read too
    return problems


class _Checker(HTMLParser):
    def __init__(self, path: str, problems: list[Problem]):
        super().__init__(convert_charrefs=True)
        self.path, self.problems = path, problems

    def _refuse(self, message: str) -> None:
        message += (
            f"; raw HTML on a page may use only {', '.join(sorted(TAGS))} "
            f"with {', '.join(sorted(ATTRIBUTES))} (CONTRIBUTING.md)"
        )
        self.problems.append(Problem(self.path, self.getpos()[0], message))

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self._refuse(f"<{tag}> is not allowed")
            return
        for name, value in attrs:
            if name not in ATTRIBUTES:
                self._refuse(f"<{tag} {name}=...> is not allowed")
            elif name == "href" and not _SAFE_URL.match((value or "").strip()):
                self._refuse(f"<{tag} href={value!r}> is not a safe link")

    handle_startendtag = handle_starttag


def symlink_problems(docs_dir: Path, root: Path) -> list[Problem]:
    """Every file or folder under ``docs_dir`` that is a symbolic link
    out of the repository (a link inside it, as a test fixture sharing
    the lesson's assets, publishes only what the repository holds)."""
    resolved = Path(root).resolve()
    repository = next(
        (p for p in (resolved, *resolved.parents) if (p / ".git").exists()),
        resolved,
    )
    problems = []
    for folder, dirs, files in os.walk(docs_dir):
        for name in sorted(dirs + files):
            path = Path(folder, name)
            try:
                if not path.is_symlink() or path.resolve().is_relative_to(
                    repository
                ):
                    continue
            except RuntimeError:  # 3.11: a loop of links leads nowhere
                pass
            rel = os.path.relpath(path, root)
            message = (
                f"{rel} is a symbolic link (to {os.readlink(path)}); "
                "the site publishes only real files: copy the file "
                "into docs/ instead"
            )
            problems.append(Problem(rel, 1, message))
    return problems
