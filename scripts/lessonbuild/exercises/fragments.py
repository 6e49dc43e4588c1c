"""Render the Markdown text values of an exercise to HTML fragments."""

from __future__ import annotations

import re

import markdown

_ONE_PARAGRAPH = re.compile(r"^<p>(?P<inner>.*)</p>$", re.DOTALL)


class Fragments:
    """One Markdown converter with the page's extensions, reused: `block`
    HTML, or `inline` (a single paragraph without its <p>)."""

    def __init__(self, extensions=(), extension_configs=None):
        self._md = markdown.Markdown(
            extensions=list(extensions),
            extension_configs=dict(extension_configs or {}),
        )
        # Raw HTML in an exercise's fields is shown as text (issue 31;
        # Python-Markdown's documented way to turn raw HTML off).
        self._md.preprocessors.deregister("html_block", strict=False)
        self._md.inlinePatterns.deregister("html", strict=False)

    def block(self, text: str) -> str:
        self._md.reset()
        return self._md.convert(text)

    def inline(self, text: str) -> str:
        out = self.block(text)
        m = _ONE_PARAGRAPH.match(out)
        if m and "<p>" not in m["inner"] and "<p " not in m["inner"]:
            return m["inner"]
        return out
