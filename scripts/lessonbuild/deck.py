"""The deck model: every page under docs/ read once, into one ``Slide`` each.

The only reader of slide files (tests/test_plugin.py audits it): MkDocs
renders the very text checked here. Fences come from markdown-it-py, with
front matter and pymdownx block openers blanked first so that their
indented bodies parse as code, parsed again for the fences inside.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from pymdownx.snippets import SnippetPreprocessor

from .problems import Problem
from .yamltext import Mapping, YamlProblem, load_yaml

KINDS = tuple(
    "Title, Objectives, Warm-up, Section, Concept, Counterexample, "
    "Comparison, Intuition, Analogy, Explain it, Estimation, Worked example, "
    "Discrimination, Trade off, Anomaly, Trap, Break the constraint, "
    "Sorting, Two truths and a lie, Ranking, Pattern, Edge cases, "
    "Elimination, Check, Prediction, Connect it up, Recap".split(", ")
)
#: Fence languages of Python, which must come from snippets/.
PYTHON_LANGS = {"python", "py", "python3", "py3", "pycon", "ipython"}
FILE_NAME = re.compile(r"^(\d{2,3})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
#: A slide file larger than this is refused unread (a runaway write).
MAX_SLIDE_BYTES = 1_000_000

# The stage markers, each on its own line (decklayout reads the classes).
READING, SCREEN_BREAK, STEPS = "reading", "screen-break", "steps"
#: Prose answering the exercise above, shown after an attempt. A
#: ``section``: Material's search stops skipping a div at its first inner
#: ``</div>`` (tests/test_search_index.py).
AFTER_ANSWER = "after-answer"
READING_OPEN = f'<div class="{READING}" markdown>'
BREAK_LINE = f'<div class="{SCREEN_BREAK}"></div>'
STEPS_OPEN = f'<div class="{STEPS}" markdown>'
_STAGE_OR_BLANK = {"", READING_OPEN, BREAK_LINE, STEPS_OPEN, "</div>"}
_BLOCK_OPENER = re.compile(r"^[ \t]*(?:!!!|\?\?\?\+?|===\+?)(?:[ \t]|$)")
_NOTE_OPENER = re.compile(r"^(?P<indent>[ \t]*)\?\?\?\+?[ \t]+instructor\b")
_MINUTES = re.compile(r"\*\*Time:\*\*\s*(\d+(?:\.\d+)?)\s*min")
# pymdownx.snippets' include, `--8<-- "path"`, and its block form.
_INCLUDE = re.compile(
    r"""^(?P<indent>[ \t]*)(?P<escape>;*)-+8<-+[ \t]+
        (?P<q>["'])(?P<target>.+?)(?P=q)[ \t]*\r?$""",
    re.VERBOSE,
)
_INCLUDE_BLOCK = re.compile(r"^[ \t]*(?P<escape>;*)-+8<-+[ \t]*\r?$")
_SECTION_MARKER = SnippetPreprocessor.RE_SNIPPET_SECTION
#: In every line pymdownx.snippets reads as an include or a section marker
#: (its ``-{1,}8<-{1,}``): a line without it is not tried (its ``.*?``
#: scan of each line of every included file: 0.03 s of a 0.4 s warm check).
MARKER_TEXT = "8<-"
_SNIPPET_FILE = SnippetPreprocessor.RE_SNIPPET_FILE
_TITLE = re.compile(r"""(?:^|\s)title=(["'])(?P<title>.*?)\1""")
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
_JINJA_EXPR = re.compile(r"\{\{-?(.*?)-?\}\}")


@dataclass
class Fence:
    """A fenced block: where it is (0-based lines) and what it holds."""

    start: int  # the opening line
    end: int | None  # the closing line; None: never closed
    indent: str  # leading whitespace of the body lines
    marker: str  # the opening run of backticks or tildes
    info: str
    content: list[str]  # lines between the fences, without indent

    line = property(lambda self: self.start + 1)
    is_output = property(lambda self: self.title == "Output")
    body = property(lambda self: "\n".join(self.content))
    # The info string is stripped: its first word, if any, is the language.
    lang = property(lambda self: "".join(self.info.split()[:1]).lower())
    is_exercise = property(
        lambda self: self.info.split()[:1] in (["exercise"], ["{.exercise}"])
    )

    @property
    def title(self) -> str | None:
        m = _TITLE.search(self.info)
        return m and m.group("title")

    @property
    def looks_like_output(self) -> bool:
        """Titled "Output" but for case or invisible characters."""
        title = self.title
        cleaned = _INVISIBLE.sub("", title or "").strip().lower()
        return title != "Output" and cleaned == "output"


@dataclass
class Include:
    line: int  # 1-based
    target: str  # as written: path plus optional :section or :lines
    path: str
    section: str | None
    fence: Fence | None = None


@dataclass
class TableCall:
    line: int
    table_id: str
    hide: str | None


@dataclass
class FigureCall:
    line: int
    figure_id: str


@dataclass
class Note:
    """A ``??? instructor`` block: for the speaker, not the student."""

    line: int  # 1-based line of the ``???`` opener
    end: int  # 1-based last line of its body
    text: str  # the body, dedented (Markdown)
    minutes: float | None  # from "**Time:** N min"


@dataclass
class Slide:
    """One page of the deck, read once. ``number`` is None off-deck."""

    path: str  # relative to the root, POSIX style
    text: str  # the file's exact text: what MkDocs renders
    lines: list[str] = field(default_factory=list)  # with line endings
    meta: dict = field(default_factory=dict)
    meta_lines: dict = field(default_factory=dict)  # key -> 1-based line
    body_line: int = 1  # 1-based line of the first line after front matter
    fences: list[Fence] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    tables: list[TableCall] = field(default_factory=list)
    figures: list[FigureCall] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    number: int | None = None

    # The front matter's title, kind and part as text ("" when absent).
    title = property(lambda self: str(self.meta.get("title", "")))
    kind = property(lambda self: str(self.meta.get("kind", "")))
    part = property(lambda self: str(self.meta.get("part", "")))

    exercises = property(
        lambda self: [f for f in self.fences if f.is_exercise]
    )

    def line_of(self, key: str) -> int:
        """1-based line of a front-matter key (1 when absent)."""
        return self.meta_lines.get(key, 1)

    def includes_in(self, fence: Fence) -> list[Include]:
        return [i for i in self.includes if i.fence is fence]

    def block_above(self, fence: Fence) -> Fence | None:
        """The fence right above ``fence``, blank lines and stage markers
        apart (a code block in a reading-only wrapper is above its Output)."""
        i = fence.start - 1
        while i >= 0 and self.lines[i].rstrip() in _STAGE_OR_BLANK:
            i -= 1
        return next(
            (f for f in self.fences if f.end == i and f is not fence), None
        )


@dataclass
class Part:
    name: str
    slides: list[Slide]


@dataclass
class Deck:
    """Every Markdown page under docs/, and the numbered slides in order."""

    root: Path
    docs: Path
    pages: list[Slide]
    problems: list[Problem]
    part_names: list[str]

    @property
    def slides(self) -> list[Slide]:
        numbered = [p for p in self.pages if p.number is not None]
        return sorted(numbered, key=lambda s: s.number)

    @property
    def parts(self) -> list[Part]:
        """The parts in the order configured, each with its slides."""
        by_name = {name: Part(name, []) for name in self.part_names}
        for slide in self.slides:
            if slide.part in by_name:
                by_name[slide.part].slides.append(slide)
        return [p for p in by_name.values() if p.slides]

    def page(self, rel: str) -> Slide | None:
        """The page at ``rel`` (relative to the root), if read."""
        return next((p for p in self.pages if p.path == rel), None)

    def page_at(self, src_uri: str) -> Slide | None:
        """The page MkDocs knows as ``src_uri`` (relative to docs/)."""
        return self._by_src_uri.get(src_uri)

    @functools.cached_property
    def _by_src_uri(self) -> dict[str, Slide]:
        return {self.docs_rel(page): page for page in self.pages}

    def docs_rel(self, page: Slide) -> str:
        """The page's path relative to docs/ (MkDocs' src_uri)."""
        return (self.root / page.path).relative_to(self.docs).as_posix()


def read_deck(
    root: Path | str,
    docs_dir: Path | str | None = None,
    parts: list[str] | None = None,
) -> Deck:
    """Read every page under ``docs_dir`` once; check the deck's structure
    (with ``parts``: each slide in one, the parts together and in order)."""
    root = Path(root).resolve()
    docs = Path(docs_dir).resolve() if docs_dir else root / "docs"
    problems: list[Problem] = []
    pages = []
    for path in sorted(docs.rglob("*.md")):
        rel = _rel(path, root)
        if (text := _read_text(path, rel, problems)) is not None:
            numbered = path.parent == docs / "slides"
            pages.append(parse_slide(rel, text, problems, numbered, parts))
    deck = Deck(root, docs, pages, problems, list(parts or []))
    _check_numbering(deck)
    if parts:
        _check_parts(deck)
    return deck


def _read_text(path: Path, rel: str, problems: list[Problem]) -> str | None:
    def refuse(line: int, message: str) -> None:
        problems.append(Problem(rel, line, message))

    try:
        if path.stat().st_size > MAX_SLIDE_BYTES:
            return refuse(
                1,
                f"file is larger than {MAX_SLIDE_BYTES:,} bytes; "
                "expected a slide of a few kilobytes",
            )
        data = path.read_bytes()
    except OSError as exc:
        return refuse(1, f"cannot read the file: {exc}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        return refuse(
            data[: exc.start].count(b"\n") + 1,
            f"not valid UTF-8 at column {column} (byte "
            f"{data[exc.start : exc.start + 1]!r}); save the file as UTF-8",
        )
    if text.startswith("\ufeff"):
        return refuse(
            1,
            "the file starts with a byte-order mark (BOM); save it as "
            "UTF-8 without BOM",
        )
    return text


def parse_slide(
    rel: str,
    text: str,
    problems: list[Problem] | None = None,
    numbered: bool = False,
    parts: list[str] | None = None,
) -> Slide:
    """Parse one page's text. Structure problems go to ``problems``."""
    problems = [] if problems is None else problems

    def problem(line: int, message: str) -> None:
        problems.append(Problem(rel, line, message))

    # Lines with their endings, split at "\n" only (as editors count).
    slide = Slide(rel, text, re.findall(r".*\n|.+", text))
    bare = [line.removesuffix("\n").removesuffix("\r") for line in slide.lines]
    front_end, read = _front_matter_end(bare), False
    if front_end is not None:
        slide.body_line = front_end + 2
        read = _read_front_matter(slide, bare[1:front_end], problem)
    elif numbered:
        problem(
            1,
            "expected front matter: a first line '---', then title, "
            "slide, kind and part, then '---'",
        )
    if numbered:
        _check_meta(slide, problem, parts, read)
    start = slide.body_line - 1  # after the front matter
    prepared = ["" if _BLOCK_OPENER.match(x) else x for x in bare[start:]]
    _scan_fences(slide.fences, prepared, start, "")
    slide.fences.sort(key=lambda f: f.start)
    _scan_includes(slide, bare)
    _scan_calls(slide, bare)
    _scan_notes(slide, bare)
    _check_stage_markers(bare, problem)
    return slide


def _check_stage_markers(bare: list[str], problem) -> None:
    """Reading-only wrappers: top level, unnested, a blank line inside each
    end (Markdown in HTML needs it), no screen break inside."""
    opened = None
    for i, line in enumerate(bare, 1):
        text = line.rstrip()
        if text.strip() in (READING_OPEN, BREAK_LINE) and text != text.strip():
            problem(
                i,
                "expected the stage marker at the start of the line, not "
                "indented",
            )
        if text == READING_OPEN:
            if opened:
                problem(
                    i,
                    f"reading-only block opened again before line {opened}'s "
                    "was closed: add '</div>' on its own line first",
                )
            opened = i
            if i < len(bare) and bare[i].strip():
                problem(i, f"expected a blank line after {READING_OPEN!r}")
        elif text == "</div>" and opened:
            if bare[i - 2].strip():
                problem(
                    i,
                    "expected a blank line before the '</div>' closing a "
                    "reading-only block",
                )
            opened = None
        elif text == BREAK_LINE and opened:
            problem(
                i,
                f"a screen break inside the reading-only block of line "
                f"{opened}: the deck drops it; move it after the block's "
                "'</div>'",
            )
    if opened:
        problem(
            opened,
            "reading-only block never closed: add '</div>' on its own line "
            "after its content",
        )


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _front_matter_end(bare: list[str]) -> int | None:
    """0-based index of the closing '---' of front matter, if any."""
    if bare and bare[0].rstrip() == "---":
        for i, line in enumerate(bare[1:], 1):
            if line.rstrip() in ("---", "..."):
                return i
    return None


def _read_front_matter(slide: Slide, lines: list[str], problem) -> bool:
    """Whether the front matter was read as a mapping (an empty one too:
    its missing keys are reported then, not its YAML)."""
    try:
        meta, duplicates = load_yaml("\n".join(lines), numbers_as_text=False)
    except YamlProblem as exc:  # lines here are 0-based from line 2
        problem(exc.line + 2, f"front matter is not valid YAML: {exc}")
        return False
    for line0, key in duplicates:
        problem(line0 + 2, f"'{key}:' appears twice; keep one")
    meta = Mapping() if meta is None else meta
    if not isinstance(meta, Mapping):
        problem(
            2,
            "front matter is not a mapping; expected 'key: value' lines "
            "(title, slide, kind, part)",
        )
        return False
    slide.meta = dict(meta)
    slide.meta_lines = {k: v + 2 for k, v in meta.key_lines.items()}
    return True


def _type_name(value) -> str:
    """What an author typed, in YAML's words: 'list', 'mapping', 'int'."""
    if isinstance(value, list):
        return "list"
    return "mapping" if isinstance(value, dict) else type(value).__name__


def _check_meta(slide: Slide, problem, parts: list[str] | None, read) -> None:
    meta = slide.meta
    match = FILE_NAME.match(slide.path.rsplit("/", 1)[-1])
    if not match:
        problem(
            1,
            "file name should be NN-slug.md (a two-digit number, a "
            "lowercase slug)",
        )
    if not read:  # no front matter, or unreadable: reported already
        return
    for key in ("title", "slide", "kind", "part"):
        if key not in meta:
            problem(1, f"front matter lacks '{key}:'")
    number = meta.get("slide")
    if "slide" in meta:
        if type(number) is not int or number < 1:  # YAML's int, not bool
            problem(
                slide.line_of("slide"),
                f"slide: {number!r} is not a positive whole number",
            )
        elif match and number != int(match.group(1)):
            problem(
                slide.line_of("slide"),
                f"slide: {number} does not match the file name's number "
                f"{match.group(1)}; rename the file or fix the number",
            )
        else:
            slide.number = number
    for key in ("title", "kind", "part"):
        if key in meta and not isinstance(meta[key], str):
            problem(
                slide.line_of(key),
                f"{key}: expected a single text value, got "
                f"{_type_name(meta[key])} {meta[key]!r}",
            )
    title = meta.get("title")
    if isinstance(title, str) and ("{{" in title or "{%" in title):
        problem(
            slide.line_of("title"),
            f"title: {title!r} holds a macro, and a title is shown as "
            "typed (the navigation, the browser tab, the deck): write it "
            "in words; a number a snippet computes belongs in the body",
        )
    elif isinstance(title, str):
        _check_heading(slide, title, problem)
    kind = meta.get("kind")
    if isinstance(kind, str) and kind not in KINDS:
        problem(
            slide.line_of("kind"),
            f"kind: {kind!r} is not a slide kind; expected one of "
            + ", ".join(KINDS),
        )
    part = meta.get("part")
    if parts and isinstance(part, str) and part not in parts:
        problem(
            slide.line_of("part"),
            f"part: {part!r} is not a part of the lesson; expected one of "
            + ", ".join(repr(p) for p in parts)
            + " (the parts are listed under the lesson plugin in mkdocs.yml)",
        )


def _check_heading(slide: Slide, title: str, problem) -> None:
    """The body's first heading is ``# {title}``: the navigation shows
    the title, the page its heading, and they must agree."""
    for n, line in enumerate(slide.lines[slide.body_line - 1 :]):
        if line.startswith("# "):
            if line[2:].strip() != title:
                problem(
                    slide.body_line + n,
                    f"heading {line.strip()!r} differs from the front "
                    f"matter's title: {title!r}; make them the same",
                )
            return
    problem(
        slide.body_line, f"no '# {title}' heading; the body starts with it"
    )


def _check_numbering(deck: Deck) -> None:
    """The slides are numbered 1..N with no gap or duplicate."""
    seen: dict[int, str] = {}
    for slide in deck.slides:
        if slide.number in seen:
            message = (
                f"slide {slide.number} is also {seen[slide.number]}; "
                "each number appears once (inserting a slide? make "
                "insert-slide SLIDE=<the new file> moves the later ones)"
            )
            deck.problems.append(
                Problem(slide.path, slide.line_of("slide"), message)
            )
        seen.setdefault(slide.number, slide.path)
    missing = sorted(set(range(1, max(seen, default=0) + 1)) - set(seen))
    if missing:
        message = (
            "no slide numbered "
            + ", ".join(str(n) for n in missing)
            + f"; expected slides numbered 1 to {max(seen)} with no gap"
        )
        where = _rel(deck.docs / "slides", deck.root)
        # A file named for a missing number whose front matter gave none
        # (invalid YAML, no or another `slide:`) has its own problem: say
        # so, or the gap reads as a file that is not there.
        unread = [
            page.path
            for page in deck.pages
            if page.number is None
            and (match := FILE_NAME.match(page.path.rsplit("/", 1)[-1]))
            and int(match.group(1)) in missing
            and page.path.startswith(where)
        ]
        if unread:
            message += (
                f" ({', '.join(unread)} "
                f"{'is' if len(unread) == 1 else 'are'} named for it but "
                "gave no number: fix the problem reported there)"
            )
        deck.problems.append(Problem(where, 1, message))


def _check_parts(deck: Deck) -> None:
    """Each part's slides are together, and the parts in order."""
    order = {name: i for i, name in enumerate(deck.part_names)}
    previous = None
    for slide in deck.slides:
        if slide.part not in order:
            continue
        if previous is not None and order[slide.part] < order[previous.part]:
            message = (
                f"part: slide {slide.number} is in {slide.part!r} but "
                f"comes after slide {previous.number} of {previous.part!r}; "
                "expected the parts in the order mkdocs.yml lists them, "
                "each part's slides together"
            )
            deck.problems.append(
                Problem(slide.path, slide.line_of("part"), message)
            )
        previous = slide


@functools.cache
def _markdown():
    """Block structure only: inline parsing off, half the time."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").disable(["inline", "text_join"])


def _scan_fences(fences: list[Fence], lines, offset: int, indent: str):
    for tok in _markdown().parse("\n".join(lines) + "\n"):
        if tok.map is None:
            continue
        first, last = tok.map
        if tok.type == "fence":
            closing = last - 1
            closed = closing > first and re.fullmatch(
                rf"\s*{tok.markup}{tok.markup[0]}*\s*", lines[closing]
            )
            # Body lines are indented to the fence marker's column.
            opening = lines[first]
            lead = re.sub(r"\S", " ", opening[: opening.find(tok.markup)])
            body = lines[first + 1 : closing if closed else last]
            fences.append(
                Fence(
                    start=offset + first,
                    end=offset + closing if closed else None,
                    indent=indent + lead,
                    marker=tok.markup,
                    info=tok.info.strip(),
                    content=[_dedent(b, len(lead)) for b in body],
                )
            )
        elif tok.type == "code_block":
            # An admonition's or tab's body: look inside.
            inner = [_dedent(line, 4) for line in lines[first:last]]
            _scan_fences(fences, inner, offset + first, indent + "    ")


def _dedent(line: str, width: int) -> str:
    """Up to ``width`` spaces off, or a tab after fewer."""
    head = line[:width]
    i = len(head) - len(head.lstrip(" "))
    if i < width and line[i : i + 1] == "\t":
        i += 1
    return line[i:]


def split_target(target: str) -> tuple[str, str | None]:
    """``"x.py:show"`` -> ``("x.py", "show")`` as pymdownx.snippets reads
    it; a trailing ``:1:5`` is a line range, no section."""
    path, _, section = _SNIPPET_FILE.match(target).groups()
    return path, section[1:] if section else None


def _scan_includes(slide: Slide, bare: list[str]) -> None:
    in_block = False
    for i, line in enumerate(bare):
        m = _INCLUDE.match(line)
        if m and not m.group("escape"):
            target = m.group("target").strip()
        elif block := _INCLUDE_BLOCK.match(line):
            if not block.group("escape"):
                in_block = not in_block
            continue
        elif in_block and line.strip() and not line.strip().startswith(";"):
            target = line.strip()
        else:
            continue
        # A fence's end is never 0 (it follows its start): None is open.
        fence = next(
            (f for f in slide.fences if f.start < i < (f.end or len(bare))),
            None,
        )
        path, section = split_target(target)
        slide.includes.append(Include(i + 1, target, path, section, fence))


def _scan_calls(slide: Slide, bare: list[str]) -> None:
    """``table()`` and ``figure()`` calls with literal arguments (the macro
    checks the others when rendering)."""
    for i, line in enumerate(bare, 1):
        for m in _JINJA_EXPR.finditer(line):
            try:
                call = ast.parse(m.group(1).strip(), mode="eval").body
            except SyntaxError:
                continue
            match call:
                case ast.Call(ast.Name("figure"), [ast.Constant(str(name))]):
                    slide.figures.append(FigureCall(i, name))
                case ast.Call(ast.Name("table"), args, keywords):
                    # A constant's value; any other expression stays a node.
                    named = dict(zip(("table_id", "hide"), args, strict=False))
                    named |= {k.arg: k.value for k in keywords}
                    table_id, hide = (
                        n.value if isinstance(n, ast.Constant) else n
                        for n in (named.get("table_id"), named.get("hide"))
                    )
                    if isinstance(table_id, str) and isinstance(
                        hide, str | None
                    ):
                        slide.tables.append(TableCall(i, table_id, hide))


def _scan_notes(slide: Slide, bare: list[str]) -> None:
    end = 0  # past the last note's body: no note opens inside one
    for i, line in enumerate(bare):
        if i < end or not (m := _NOTE_OPENER.match(line)):
            continue
        width = len(m.group("indent")) + 4
        end = i + 1
        # Blank, or indented (tabs at 4) by ``width`` or more.
        while end < len(bare) and (
            not bare[end].strip() or bare[end].expandtabs(4)[:width].isspace()
        ):
            end += 1
        body = [x[width:] if x.strip() else "" for x in bare[i + 1 : end]]
        while body and not body[-1]:
            body.pop()
        text = "\n".join(body)
        minutes = float(t[1]) if (t := _MINUTES.search(text)) else None
        slide.notes.append(Note(i + 1, i + 1 + len(body), text, minutes))


def sections(lines: list[str]) -> dict[str, tuple[int, int]]:
    """A file's ``--8<-- [start:name]`` sections as pymdownx.snippets
    reads them: {name: (first line inside, end marker's line or the end)},
    0-based."""
    found: dict[str, tuple[int, int]] = {}
    closed: set[str] = set()
    for i, line in enumerate(lines):
        m = MARKER_TEXT in line and _SECTION_MARKER.match(line)
        if not m or m.group("escape") or m.group("name") in closed:
            continue
        name = m.group("name")
        if m.group("type").lower() == "start":
            found.setdefault(name, (i + 1, len(lines)))
        else:
            closed.add(name)
            if name in found:
                found[name] = (found[name][0], i)
    return found


def section_exists(text: str, name: str) -> bool:
    return name in sections(text.splitlines())
