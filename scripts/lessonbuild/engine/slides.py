"""Read slides: code blocks, their snippet includes, Output blocks, macros.

Fences are found with markdown-it-py (CommonMark), which gives each fence
its info string and line span. Two pymdownx constructs CommonMark does not
know are handled before parsing, keeping every line number: YAML front
matter is blanked, and so are the opening lines of admonitions, details
and tabs (``!!!``, ``???``, ``===``), so that their indented bodies parse
as indented code, which is parsed again, dedented, to find the fences
inside. Include lines (``--8<--``) are pymdownx.snippets syntax; it
expands them on every line of the page, so they are found on raw lines.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt

#: Fence languages that hold Python, which must come from snippets/.
PYTHON_LANGS = {"python", "py", "python3", "py3", "pycon", "ipython"}

# Only block structure matters (fences): skip inline parsing, half the time.
_MD = MarkdownIt("commonmark").disable(["inline", "text_join"])
_BLOCK_OPENER = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)(?:[ \t]|$)")
# pymdownx.snippets' single-line include, `--8<-- "path"`, and its block
# form, a line `--8<--` alone, opening and closing a list of paths.
_INCLUDE = re.compile(
    r"""^(?P<indent>[ \t]*)(?P<escape>;*)-+8<-+[ \t]+
        (?P<q>["'])(?P<target>.+?)(?P=q)[ \t]*\r?$""",
    re.VERBOSE,
)
_INCLUDE_BLOCK = re.compile(r"^[ \t]*(?P<escape>;*)-+8<-+[ \t]*\r?$")
_SECTION_NAME = re.compile(r"(?i)[a-z][-_0-9a-z]*")
_LINE_SPEC = re.compile(r"(?::-?[0-9]*){1,2}(?:,-?[0-9]*(?::-?[0-9]*)?)*")
_TITLE_OUTPUT = re.compile(r"""(?:^|\s)title=(["'])Output\1""")
_JINJA_EXPR = re.compile(r"\{\{-?(.*?)-?\}\}")


@dataclass
class Fence:
    """A fenced code block: where it is and what it holds."""

    slide: str  # path relative to the root, POSIX style
    start: int  # 0-based index of the opening line
    end: int | None  # 0-based index of the closing line; None: unclosed
    indent: str  # the opening line's leading whitespace
    marker: str  # the opening run of backticks or tildes
    info: str
    content: list[str]  # lines between the fences, without indent

    @property
    def line(self) -> int:
        return self.start + 1

    @property
    def lang(self) -> str:
        return self.info.split(maxsplit=1)[0].lower() if self.info else ""

    @property
    def is_output(self) -> bool:
        return bool(_TITLE_OUTPUT.search(self.info))


@dataclass
class Include:
    """One ``--8<--`` include line."""

    slide: str
    line: int  # 1-based
    target: str  # as written: path plus optional :section or :lines
    path: str  # the file part
    section: str | None
    fence: Fence | None = None


@dataclass
class TableCall:
    """A ``{{ table("id", hide="col") }}`` macro call with literal args."""

    slide: str
    line: int
    table_id: str
    hide: str | None


@dataclass
class Slide:
    path: str
    lines: list[str]  # raw lines, with their line endings
    fences: list[Fence] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    tables: list[TableCall] = field(default_factory=list)

    def includes_in(self, fence: Fence) -> list[Include]:
        return [i for i in self.includes if i.fence is fence]

    def block_above(self, fence: Fence) -> Fence | None:
        """The fence that ends right above ``fence`` (blank lines apart)."""
        i = fence.start - 1
        while i >= 0 and not self.lines[i].strip():
            i -= 1
        for other in self.fences:
            if other.end == i and other is not fence:
                return other
        return None


def split_target(target: str) -> tuple[str, str | None]:
    """``"snippets/x.py:show"`` -> ``("snippets/x.py", "show")``.

    Mirrors pymdownx.snippets: a trailing ``:name`` is a section, a
    trailing ``:1:5`` a line range (kept as no section).
    """
    head, sep, tail = target.rpartition(":")
    if sep and _SECTION_NAME.fullmatch(tail):
        return head, tail
    m = re.search(r":[-0-9:,]*$", target)
    if m and _LINE_SPEC.fullmatch(m.group(0)):
        return target[: m.start()], None
    return target, None


def read_slide(root: Path, path: Path) -> Slide:
    rel = path.relative_to(root).as_posix()
    # Bytes decoded as they are: CRLF files keep their line endings.
    text = path.read_bytes().decode("utf-8")
    return parse_slide(rel, text)


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split at "\n" only (as editors count)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    return out + [lines[-1]] if lines[-1] else out


def _bare(line: str) -> str:
    line = line[:-1] if line.endswith("\n") else line
    return line[:-1] if line.endswith("\r") else line


def parse_slide(rel: str, text: str) -> Slide:
    lines = split_lines(text)
    slide = Slide(rel, lines)
    bare = [_bare(line) for line in lines]
    _scan_fences(slide, _prepare(bare), 0, "")
    slide.fences.sort(key=lambda f: f.start)
    _scan_includes(slide, bare)
    _scan_tables(slide, bare)
    return slide


def _prepare(bare: list[str]) -> list[str]:
    out = list(bare)
    if out and out[0].strip() == "---":
        for i in range(1, len(out)):
            if out[i].strip() in ("---", "..."):
                for j in range(i + 1):
                    out[j] = ""
                break
    return ["" if _BLOCK_OPENER.match(line) else line for line in out]


def _scan_fences(slide: Slide, lines: list[str], offset: int, indent: str):
    tokens = _MD.parse("\n".join(lines) + "\n")
    for tok in tokens:
        if tok.map is None:
            continue
        first, last = tok.map
        if tok.type == "fence":
            opening = lines[first]
            closing = last - 1
            closed = closing > first and _closes(lines[closing], tok.markup)
            # Body lines are indented to the column of the fence marker
            # (deeper than the line's own indent in a list item).
            column = opening.find(tok.markup)
            lead = re.sub(r"\S", " ", opening[:column])
            body = lines[first + 1 : closing if closed else last]
            slide.fences.append(
                Fence(
                    slide=slide.path,
                    start=offset + first,
                    end=offset + closing if closed else None,
                    indent=indent + lead,
                    marker=tok.markup,
                    info=tok.info.strip(),
                    content=[_dedent(b, len(lead)) for b in body],
                )
            )
        elif tok.type == "code_block":
            # An indented block: the body of an admonition or tab, so
            # look inside it (or a real indented code block: harmless).
            inner = [_dedent(line, 4) for line in lines[first:last]]
            _scan_fences(slide, inner, offset + first, indent + "    ")


def _closes(line: str, marker: str) -> bool:
    """Whether ``line`` is a closing fence for ``marker``."""
    pattern = rf"\s*{re.escape(marker[0])}{{{len(marker)},}}\s*"
    return re.fullmatch(pattern, line) is not None


def _dedent(line: str, width: int) -> str:
    i = 0
    while i < width and i < len(line) and line[i] == " ":
        i += 1
    if i < width and i < len(line) and line[i] == "\t":
        i += 1
    return line[i:]


def _scan_includes(slide: Slide, bare: list[str]) -> None:
    in_block = False
    for i, line in enumerate(bare):
        m = _INCLUDE.match(line)
        target = None
        if m and not m.group("escape"):
            target = m.group("target").strip()
        elif _INCLUDE_BLOCK.match(line):
            if not _INCLUDE_BLOCK.match(line).group("escape"):
                in_block = not in_block
            continue
        elif in_block and line.strip() and not line.strip().startswith(";"):
            target = line.strip()
        if target is None:
            continue
        path, section = split_target(target)
        fence = next(
            (
                f
                for f in slide.fences
                if f.start < i and (f.end is None or i < f.end)
            ),
            None,
        )
        slide.includes.append(
            Include(slide.path, i + 1, target, path, section, fence)
        )


def _scan_tables(slide: Slide, bare: list[str]) -> None:
    for i, line in enumerate(bare):
        for m in _JINJA_EXPR.finditer(line):
            call = _table_call(m.group(1))
            if call is not None:
                slide.tables.append(TableCall(slide.path, i + 1, *call))


def _table_call(expr: str) -> tuple[str, str | None] | None:
    """Literal arguments of a ``table(...)`` expression, else None."""
    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "table"
    ):
        return None
    args = list(node.args)
    kwargs = {k.arg: k.value for k in node.keywords}
    if args:
        kwargs.setdefault("table_id", args.pop(0))
    if args:
        kwargs.setdefault("hide", args.pop(0))
    values = {}
    for name in ("table_id", "hide"):
        value = kwargs.get(name)
        if value is None:
            values[name] = None
        elif isinstance(value, ast.Constant) and (
            value.value is None or isinstance(value.value, str)
        ):
            values[name] = value.value
        else:
            return None  # not literal: the macro checks it when rendering
    if not isinstance(values["table_id"], str):
        return None
    return values["table_id"], values["hide"]


def section_exists(text: str, name: str) -> bool:
    """Whether ``text`` has a ``--8<-- [start:name]`` section marker."""
    pattern = re.compile(
        r"(?<!;)-+8<-+[ \t]+\[[ \t]*start[ \t]*:[ \t]*"
        + re.escape(name)
        + r"[ \t]*\]",
        re.IGNORECASE,
    )
    return any(pattern.search(line) for line in text.splitlines())
