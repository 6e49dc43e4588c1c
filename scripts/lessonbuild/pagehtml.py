"""The build's last touches to a page's HTML: inline code that a phone's
narrow column breaks between tokens only, and code-line anchors without a
duplicate attribute. No character of the text changes.
"""

from __future__ import annotations

import re

#: A code line's anchor repeats its ``id`` as ``name`` and ``href``, which
#: nothing uses: 1.9 KB of slide 15 (the bench's page-weight budget).
_LINE_LINK = re.compile(r' (?:name="|href="#)__codelineno-[\w-]+"')
_INLINE_CODE = re.compile(r"<code>([^<]*)</code>")
#: A command-line flag (``-m``, not ``dim=-1``).
_FLAG = re.compile(r"(?<![^\s])(--?[A-Za-z][\w-]*)")
#: Where inline code may break besides spaces: before ``.name`` (not
#: ``self.`` or a file's extension); else a phone broke "vie" / "w(B".
_CODE_BREAK = re.compile(
    r"(?<=[\w)\]])(?<!\bself)(?=\.[A-Za-z_])(?!\.(?:py|md|ipynb|zip)\b)"
)
#: In a table cell (a third of a phone's column) also after a word's
#: underscore, an opening bracket or a product's ``*``.
_CELL_BREAK = re.compile(
    _CODE_BREAK.pattern
    + r"|(?<=[a-z]{3}_)(?=[a-z]{4})|(?<=[(\[])(?=\w)|(?<=\w\*)(?=\w)"
)
_CELL = re.compile(r"<t[dh][\s>].*?</t[dh]>", re.DOTALL)


def tidy(html: str) -> str:
    """The page with both touches."""
    return code_breaks(_LINE_LINK.sub("", html))


def code_breaks(html: str) -> str:
    """Inline code breaking between tokens only: ``<wbr>`` where it may,
    and a flag kept whole (browsers break after any hyphen)."""

    def marked(m, breaks=_CODE_BREAK):
        text = _FLAG.sub(r'<span class="code-flag">\1</span>', m[1])
        return f"<code>{breaks.sub('<wbr>', text)}</code>"

    # Cells first: their code, once marked, is no plain-text code below.
    html = _CELL.sub(
        lambda c: _INLINE_CODE.sub(lambda m: marked(m, _CELL_BREAK), c[0]),
        html,
    )
    return _INLINE_CODE.sub(marked, html)
