"""Typeset the site's math at build time with the vendored KaTeX.

arithmatex's generic ``\\(...\\)`` / ``\\[...\\]`` become KaTeX's HTML and
MathML: pages need no script, so math shows with scripts off and from
disk. One node process (katex_render.js) serves a build, each formula
once; a formula KaTeX refuses is a problem at its file and line. Search
reads the pages before they are typeset (KaTeX's output is three copies
of the text, and search cannot skip some), so they are typeset again,
from the cache, after they are indexed.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from .problems import Problem

HERE = Path(__file__).resolve().parent
RENDERER_JS = HERE / "katex_render.js"
# The KaTeX the site serves.
KATEX_JS = HERE.parents[1] / "docs/assets/vendor/katex/katex.min.js"
_FORMULA = re.compile(
    r'<(?P<tag>span|div)(?P<attrs>[^>]*\bclass="arithmatex"[^>]*)>'
    r"(?P<body>.*?)</(?P=tag)>",
    re.DOTALL,
)
_DELIMITERS = {"span": ("\\(", "\\)"), "div": ("\\[", "\\]")}


class TexError(ValueError):
    """KaTeX could not typeset a formula (the message says why)."""


class MathRenderer:
    """TeX to HTML with KaTeX in one node process, started on the first
    formula and stopped by ``close`` (or a ``with``). ``cache`` may be
    shared across ``mkdocs serve`` rebuilds."""

    def __init__(self, *, cache=None):
        self._process: subprocess.Popen | None = None
        self._cache = {} if cache is None else cache  # (tex, display): html

    def __enter__(self) -> MathRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the node process (safe to call twice)."""
        process, self._process = self._process, None
        if process is not None:
            process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()

    def render(self, tex: str, display: bool = False) -> str:
        """KaTeX's HTML+MathML for one formula; raises TexError."""
        key = (tex, display)
        if key not in self._cache:
            if self._process is None:
                if shutil.which("node") is None:
                    raise RuntimeError(
                        "'node' not found: the build typesets math with "
                        "node (v18 or later); install nodejs"
                    )
                if not KATEX_JS.is_file():
                    raise RuntimeError(f"{KATEX_JS}: vendored KaTeX missing")
                self._process = subprocess.Popen(
                    ["node", str(RENDERER_JS), str(KATEX_JS)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    encoding="utf-8",
                    bufsize=1,
                )
            request = json.dumps({"tex": tex, "display": display})
            self._process.stdin.write(request + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
            if not line:
                code, self._process = self._process.poll(), None
                raise RuntimeError(
                    f"katex_render.js stopped (exit code {code})"
                )
            answer = json.loads(line)
            if "error" in answer:
                raise TexError(answer["error"])
            self._cache[key] = answer["html"]
        return self._cache[key]

    def render_html(self, page: str, path: str, source: str = ""):
        """(the page's HTML with every formula typeset, the problems at
        ``path`` and the line of ``source``, its text; a failing formula
        keeps its TeX)."""
        problems: list[Problem] = []

        def typeset(match: re.Match) -> str:
            tag, attrs = match["tag"], match["attrs"]
            left, right = _DELIMITERS[tag]
            body = html.unescape(match["body"]).strip()
            if not (body.startswith(left) and body.endswith(right)):
                message = (
                    f"formula not wrapped in {left} {right} (expected "
                    "pymdownx.arithmatex with generic: true): "
                    f"{body[:60]!r}"
                )
                problems.append(Problem(path, _line_of(body, source), message))
                return match[0]
            tex = body[len(left) : -len(right)].strip()
            try:
                return (
                    f"<{tag}{attrs}>{self.render(tex, tag == 'div')}</{tag}>"
                )
            except TexError as e:
                message = (
                    f"TeX error in {left}{tex}{right}: {e} (fix the "
                    "formula; what KaTeX supports: "
                    "https://katex.org/docs/supported)"
                )
                problems.append(Problem(path, _line_of(tex, source), message))
                return match[0]

        return _FORMULA.sub(typeset, page), problems


def _line_of(tex: str, source: str) -> int:
    """The line of ``source`` that holds ``tex`` (or its first line); 1
    when none does (a macro made it)."""
    for needle in (tex, *tex.strip().splitlines()[:1]):
        if needle and needle in source:
            return source.count("\n", 0, source.index(needle)) + 1
    return 1
