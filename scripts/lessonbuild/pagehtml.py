"""The build's last touches to a page's HTML, after Markdown and the
widgets: inline code that a phone's narrow column breaks between tokens
only, and code-line anchors without a duplicate attribute. No character
of the text changes: what is copied, searched or compared is the same.
"""

from __future__ import annotations

import re

#: pymdownx's anchor on each code line carries a ``name`` and an
#: ``href`` beside its ``id``, the same value: a line is cited by its id
#: (HTML5), and the link goes nowhere a reader can click (the lesson
#: shows no line numbers): 50 bytes a line, 1.9 KB of slide 15, the
#: page the bench's page-weight budget is measured on.
_LINE_LINK = re.compile(r' (?:name="|href="#)__codelineno-[\w-]+"')
#: Inline code with nothing but text in it (no highlighting spans).
_INLINE_CODE = re.compile(r"<code>([^<]*)</code>")
#: A command-line flag in inline code (``-m``, ``--dirty``): after a
#: space or at the start, so ``-1`` or ``dim=-1`` is no flag.
_FLAG = re.compile(r"(?<![^\s])(--?[A-Za-z][\w-]*)")
#: Where a line of inline code may break besides its spaces: before
#: ``.name`` (not after ``self``: ``self.W_O`` reads as one; nor before a
#: file's extension: ``my_mha.py``). Without it a phone's narrow steps
#: (slide 33's order widget, 165 px of code) broke tokens anywhere
#: ("transpose(1" / "," / "2)", "vie" / "w(B").
_CODE_BREAK = re.compile(
    r"(?<=[\w)\]])(?<!\bself)(?=\.[A-Za-z_])(?!\.(?:py|md|ipynb|zip)\b)"
)
#: In a table cell, a phone's column shared by three, also after an
#: underscore between words (``average_attn_`` / ``weights``, not
#: ``d_`` / ``model``), an opening bracket or a product's ``*``
#: (``3*h*d_model*`` / ``d_k``); in running text a name moves to the
#: next line whole ("num_" / "heads" read as two names).
_CELL_BREAK = re.compile(
    _CODE_BREAK.pattern
    + r"|(?<=[a-z]{3}_)(?=[a-z]{4})|(?<=[(\[])(?=\w)|(?<=\w\*)(?=\w)"
)
_CELL = re.compile(r"<t[dh][\s>].*?</t[dh]>", re.DOTALL)


def tidy(html: str) -> str:
    """The page with both touches (:func:`code_breaks`, :data:`_LINE_LINK`)."""
    return code_breaks(_LINE_LINK.sub("", html))


def code_breaks(html: str) -> str:
    """Each inline code of a page breaking between tokens only: ``<wbr>``
    at :data:`_CODE_BREAK` (:data:`_CELL_BREAK` in a table cell), and a
    command-line flag (:data:`_FLAG`) kept whole, as browsers break after
    any hyphen ("python -" / "m mha_ref.grade"). No character is added:
    copying is unchanged."""

    def marked(m, breaks=_CODE_BREAK):
        text = _FLAG.sub(r'<span class="code-flag">\1</span>', m[1])
        return f"<code>{breaks.sub('<wbr>', text)}</code>"

    def in_cell(m):
        return marked(m, _CELL_BREAK)

    # Cells first: their code, once marked, is no plain-text code below.
    html = _CELL.sub(lambda c: _INLINE_CODE.sub(in_cell, c[0]), html)
    return _INLINE_CODE.sub(marked, html)
