"""Typeset the site's math at build time with the vendored KaTeX.

pymdownx.arithmatex (generic mode) leaves each formula in the page as
``<span class="arithmatex">\\(...\\)</span>`` or
``<div class="arithmatex">\\[...\\]</div>``. Here we replace the TeX inside
with KaTeX's HTML (what the eye sees) and MathML (what screen readers
read), so pages need KaTeX's CSS and fonts but no JavaScript: math is
typeset with scripts off, opened from disk, and before any script runs.

One node process (katex_render.js) serves a whole build, fed JSON lines
through a pipe; each distinct formula is typeset once. KaTeX runs with
``throwOnError``, and a formula it cannot parse becomes a problem naming
the slide's file and line, which the caller turns into a failed build.

Search: typeset, a formula's text is three run-together copies (MathML,
its TeX annotation, KaTeX's visual layer), and Material's search cannot
skip just some of them (its ``data-search-exclude`` stops at the first
nested element of the same tag). So the search index should be built
from the page before typesetting, which holds each formula once, as TeX.
Formulas are cached, so typesetting a page a second time is cheap and
cannot fail anew: check while the pages are read, typeset again after
they are indexed (see hooks/math_hook.py).
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
# scripts/lessonbuild -> repository root -> the KaTeX the site serves.
KATEX_JS = HERE.parents[1] / "docs/assets/vendor/katex/katex.min.js"

# arithmatex's generic output: the wrapper keeps its tag and attributes.
_FORMULA = re.compile(
    r'<(?P<tag>span|div)(?P<attrs>[^>]*\bclass="arithmatex"[^>]*)>'
    r"(?P<body>.*?)</(?P=tag)>",
    re.DOTALL,
)
_DELIMITERS = {"span": ("\\(", "\\)"), "div": ("\\[", "\\]")}


class TexError(ValueError):
    """KaTeX could not typeset a formula."""

    def __init__(self, tex: str, message: str, position: int | None):
        super().__init__(message)
        self.tex = tex
        self.message = message
        self.position = position


class MathRenderer:
    """Typesets TeX with KaTeX in one long-lived node process.

    Use as a context manager (the process is started on the first formula
    and stopped on exit)::

        with MathRenderer() as math:
            page, problems = math.render_html(page, path, source)
    """

    def __init__(
        self,
        *,
        node: str = "node",
        katex_js: Path = KATEX_JS,
        cache: dict[tuple[str, bool], str] | None = None,
    ) -> None:
        """``cache``: formulas typeset before, shared with this renderer
        (the plugin keeps one across ``mkdocs serve`` rebuilds, so an
        unchanged formula is never sent to node again)."""
        self.node = node
        self.katex_js = Path(katex_js)
        self._process: subprocess.Popen | None = None
        self._cache: dict[tuple[str, bool], str] = (
            {} if cache is None else cache
        )
        self._next_id = 0

    def __enter__(self) -> MathRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the node process (safe to call twice)."""
        process, self._process = self._process, None
        if process is None:
            return
        process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()

    def _start(self) -> subprocess.Popen:
        if shutil.which(self.node) is None:
            raise RuntimeError(
                f"{self.node!r} not found: the build typesets math with "
                "node (v18 or later); install nodejs"
            )
        if not self.katex_js.is_file():
            raise RuntimeError(f"{self.katex_js}: vendored KaTeX missing")
        return subprocess.Popen(
            [self.node, str(RENDERER_JS), str(self.katex_js)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )

    def render(self, tex: str, display: bool = False) -> str:
        """KaTeX's HTML+MathML for one formula; raises TexError."""
        key = (tex, display)
        if key in self._cache:
            return self._cache[key]
        if self._process is None:
            self._process = self._start()
        self._next_id += 1
        request = {"id": self._next_id, "tex": tex, "display": display}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            code = self._process.poll()
            self._process = None
            raise RuntimeError(f"katex_render.js stopped (exit code {code})")
        answer = json.loads(line)
        if answer["id"] != request["id"]:
            raise RuntimeError("katex_render.js answered out of order")
        if "error" in answer:
            raise TexError(tex, answer["error"], answer["position"])
        self._cache[key] = answer["html"]
        return answer["html"]

    def render_html(
        self, page: str, path: str, source: str = ""
    ) -> tuple[str, list[Problem]]:
        """Typeset every arithmatex formula in a page's HTML.

        ``path`` names the page's Markdown file in problems; ``source`` is
        its text, searched to find the line of a formula that fails.
        Returns the new HTML and the problems; a formula with a problem
        keeps its TeX (the build is expected to fail on any problem).
        """
        problems: list[Problem] = []

        def typeset(match: re.Match) -> str:
            tag, attrs = match["tag"], match["attrs"]
            left, right = _DELIMITERS[tag]
            body = html.unescape(match["body"]).strip()
            if not (body.startswith(left) and body.endswith(right)):
                problems.append(
                    Problem(
                        path,
                        _line_of(body, source),
                        f"formula not wrapped in {left} {right} (expected "
                        "pymdownx.arithmatex with generic: true): "
                        f"{body[:60]!r}",
                    )
                )
                return match[0]
            tex = body[len(left) : -len(right)].strip()
            try:
                typeset_tex = self.render(tex, display=tag == "div")
            except TexError as e:
                problems.append(
                    Problem(
                        path,
                        _line_of(tex, source),
                        f"TeX error in {left}{tex}{right}: {e.message} "
                        "(fix the formula; what KaTeX supports: "
                        "https://katex.org/docs/supported)",
                    )
                )
                return match[0]
            return f"<{tag}{attrs}>{typeset_tex}</{tag}>"

        return _FORMULA.sub(typeset, page), problems


def _line_of(tex: str, source: str) -> int:
    """The 1-based line in ``source`` where ``tex`` (or its first line)
    appears; 1 when the source does not hold it verbatim (a macro made
    it, say), so the problem still names the file."""
    first = tex.strip().splitlines()[0] if tex.strip() else ""
    for needle in (tex, first):
        if needle and needle in source:
            return source.count("\n", 0, source.index(needle)) + 1
    return 1
