"""The slides' template language: the lesson's macros, and nothing else.

``table``, ``value`` and ``figure`` place what a snippet published, ``ref``
a slide's number or an option's letter. A slide is data, not code (issue
31): a sandboxed Jinja whose only names are these macros renders a page,
after refusing at file and line anything but a call of one with literal
arguments. Fenced blocks are published literally (``{% raw %}``, and
``--8<--`` lines escaped in Output blocks). ``make fastcheck`` runs the
same check (``template_problems``).
"""

from __future__ import annotations

import posixpath
import re
from html import escape

from jinja2 import StrictUndefined, nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.sandbox import SandboxedEnvironment
from pymdownx.snippets import SnippetPreprocessor

from lessonbuild import present
from lessonbuild.engine import render_table
from lessonbuild.engine.tables import unknown_message
from lessonbuild.problems import Problem
from lessonbuild.settings import PLUGIN_NAME


def define_env(env):
    """The macros a slide may call: mkdocs-macros' entry point, which
    the exercise fixture site (tests/exercise_fixtures/mkdocs.yml) loads
    with that plugin, and the lesson's ``Templates`` calls itself."""

    def lesson():
        plugin = env.conf.plugins.get(PLUGIN_NAME)
        found = getattr(plugin, "build", None)  # build.Build
        if found is None or found.result is None:
            raise ValueError(
                "table(): the lesson plugin is not configured; expected "
                f"'- {PLUGIN_NAME}' under plugins in mkdocs.yml"
            )
        return found

    def refuse(name: str, message: str):
        """A ValueError at the line of the call that names ``name``."""
        page, deck = getattr(env.page, "file", None), lesson().deck
        slide = deck.page_at(page.src_uri) if page and deck else None
        if slide is None:
            return ValueError(message)
        lines = enumerate(slide.lines, 1)
        at = next((i for i, line in lines if name in line and "{{" in line), 1)
        return ValueError(f"{slide.path}:{at}: {message}")

    def published(kind: str, item_id: str):
        """The table, value or figure a snippet published as ``item_id``."""
        found = getattr(lesson().result, kind + "s")
        if item_id not in found:
            message = unknown_message(kind, item_id, sorted(found))
            raise refuse(item_id, message)
        return found[item_id]

    @env.macro
    def table(table_id, hide=None, indent=0):
        """A published table as Markdown, ``indent`` for a fold."""
        data = published("table", table_id)
        try:
            markdown = render_table(data, hide, table_id)
        except ValueError as exc:  # no such column
            raise refuse(table_id, str(exc)) from None
        return markdown.replace("\n", "\n" + " " * indent)

    @env.macro
    def value(value_id):
        """A figure a snippet published (``publish_value``), escaped."""
        return escape(str(published("value", value_id)))

    @env.macro
    def figure(figure_id):
        """A published figure, linked relatively (the page works from
        disk), with its narrow layout for a phone where it has one."""
        data = published("figure", figure_id)
        depth = env.page.url.count("/") if env.page else 0
        src = escape("../" * depth + f"figures/{figure_id}.svg")
        img = f'<img src="{src}" alt="{escape(data["alt"])}" loading="lazy">'
        if "narrow" not in data:
            return f'<figure class="lesson-figure">{img}</figure>'
        # Below 500 px (figures.css) the wide drawing is not legible.
        narrow = src.removesuffix(".svg") + ".narrow.svg"
        return (
            '<figure class="lesson-figure lesson-figure--narrow"><picture>'
            f'<source media="(max-width: 34em)" srcset="{narrow}">{img}'
            "</picture></figure>"
        )

    @env.macro
    def class_period():
        """ "120 min + homework": the notes' "Time: N min", added up."""
        return present.class_period(lesson().deck)

    @env.macro
    def ref(target, option=None, to=None, cap=False):
        """``slide N`` (linked), ``slides N–M``, or an option's letter."""
        refs, uri = lesson().refs, env.page.file.src_uri
        try:
            return refs.render(target, option, page=uri, to=to, cap=cap)
        except ValueError as exc:
            raise refuse(target, str(exc)) from None

    @env.macro
    def part_contents():
        """A Section slide's contents: its part's other slides, linked."""
        deck = lesson().deck
        here = deck.page_at(env.page.file.src_uri)
        if here is None:
            raise ValueError(
                f"{env.page.file.src_uri}:1: part_contents(): only a slide "
                "has a part; call it on a slide under docs/slides/"
            )
        folder = posixpath.dirname(deck.docs_rel(here))
        others = [s for s in deck.slides if s.part == here.part]
        return "\n".join(
            f"{i}. [{escape(s.title)}]"
            f"({posixpath.relpath(deck.docs_rel(s), folder)})"
            for i, s in enumerate((s for s in others if s is not here), 1)
        )

    @env.macro
    def lesson_parts():
        """The home page's parts: slides, minutes and progress."""
        from lessonbuild.exercises.progress import parts_overview

        build = lesson()
        prefix, uri = build.settings.storage_prefix, env.page.file.src_uri
        return parts_overview(build.deck, prefix, page_uri=uri)


class TemplateProblem(ValueError):
    """A page's template refused, as problems at file and line."""

    def __init__(self, problems: list[Problem]):
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


class Templates:
    """The one template environment of a build (plugin: ``render``)."""

    def __init__(self, conf=None):
        self.conf, self.page, self.macros = conf, None, {}
        define_env(self)
        # Not Jinja's own globals (range, cycler, joiner, lipsum...).
        self.jinja = SandboxedEnvironment(undefined=StrictUndefined)
        self.jinja.globals = dict(self.macros)

    def macro(self, function):
        """``@env.macro``, as mkdocs-macros spells it."""
        self.macros[function.__name__] = function
        return function

    def render(self, markdown: str, page, path: str, lines: list[str]):
        """The page's Markdown with its macro calls replaced; ``path`` and
        ``lines`` (the whole file) place a problem. Raises TemplateProblem."""
        source, problems = refusals(markdown, path, lines, self.macros)
        if problems:
            raise TemplateProblem(problems)
        self.page = page
        try:
            return self.jinja.from_string(source).render()
        except Exception as exc:  # a macro's own error names its line
            text = str(exc)
            named = re.match(r"(\S+):(\d+): (.*)", text, re.DOTALL)
            where, line, message = named.groups() if named else (path, 1, text)
            problem = Problem(where, int(line), message.strip())
            raise TemplateProblem([problem]) from None
        finally:
            self.page = None


def template_problems(page) -> list[Problem]:
    """What ``Templates.render`` would refuse in a deck page."""
    text = "\n".join(line.rstrip("\r\n") for line in page.lines)
    return refusals(text, page.path, page.lines, Templates().macros)[1]


def refusals(markdown: str, path: str, lines: list[str], names):
    """(the source to render, the problems): fences made literal, then
    every construct but a call of ``names`` with literal arguments."""
    lines = [line.rstrip("\r\n") for line in lines]
    source, problems = literal_fences(markdown, path, lines)
    return source, problems or check_calls(source, path, lines, set(names))


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
_ENDRAW = re.compile(r"\{%-?\s*(end)?raw\s*-?%\}")
_OUTPUT = re.compile(r"""title\s*=\s*["']Output["']""")
_INCLUDE = SnippetPreprocessor.RE_ALL_SNIPPETS
_SECTION = SnippetPreprocessor.RE_SNIPPET_SECTION


def _offset(markdown: str, lines: list[str]) -> int:
    """How many file lines precede the Markdown (its front matter)."""
    count = len(markdown.split("\n"))
    total = len(lines) - (1 if lines and lines[-1] == "" else 0)
    return max(0, total - count + (1 if markdown.endswith("\n") else 0))


def literal_fences(markdown: str, path: str, lines: list[str]):
    """(source, problems): every fenced block in ``{% raw %}`` on its fence
    lines; in an Output block each line pymdownx.snippets would act on
    escaped with one more ``;``."""
    out, problems = [], []
    offset = _offset(markdown, lines)
    marker, output = None, False
    for n, line in enumerate(markdown.split("\n"), 1):
        m = _FENCE.match(line)
        if marker is None:
            if m and not (m["marker"][0] == "`" and "`" in m["info"]):
                marker, output = m["marker"], bool(_OUTPUT.search(m["info"]))
                line = "{% raw %}" + line
        elif (
            m
            and m["marker"][0] == marker[0]
            and len(m["marker"]) >= len(marker)
            and not m["info"].strip()
        ):
            marker = None
            line += "{% endraw %}"
        else:
            if _ENDRAW.search(line):
                message = (
                    "a code block may not contain a Jinja raw tag ({% raw %}"
                    " / {% endraw %}): code blocks are published literally"
                )
                problems.append(Problem(path, n + offset, message))
            for snippet in (_INCLUDE, _SECTION) if output else ():
                if m := snippet.match(line):
                    at = m.start("escape")
                    line = line[:at] + ";" + line[at:]
                    break
        out.append(line)
    if marker is not None:
        out[-1] += "{% endraw %}"
    return "\n".join(out), problems


def check_calls(source: str, path: str, lines: list[str], names: set[str]):
    """Problems for everything in ``source`` but text and calls of
    ``names`` with literal arguments."""
    offset = _offset(source, lines)
    allowed = ", ".join(f"{{{{ {n}(...) }}}}" for n in sorted(names))
    literal = "(a literal {{ goes in a code block)"
    try:
        tree = SandboxedEnvironment().parse(source)
    except TemplateSyntaxError as exc:
        line = (exc.lineno or 1) + offset
        message = f"template syntax error: {exc.message}; only {allowed} "
        return [
            Problem(path, line, f"{message}may appear on a page {literal}")
        ]
    problems = []
    source_lines = source.split("\n")

    def refuse(node, what):
        line = _locate(node.lineno, source_lines, lines, offset)
        message = (
            f"{what} is not allowed in a page's template: only {allowed} "
            f"with literal arguments (strings, numbers) may appear {literal}"
        )
        problems.append(Problem(path, line, message))

    for node in tree.body:
        if not isinstance(node, nodes.Output):
            refuse(
                node, f"the statement {{% {type(node).__name__.lower()} %}}"
            )
            continue
        for item in node.nodes:
            if isinstance(item, nodes.TemplateData):
                continue
            if not (
                isinstance(item, nodes.Call)
                and isinstance(item.node, nodes.Name)
                and item.node.name in names
            ):
                refuse(item, f"the expression {_describe(item)}")
                continue
            arguments = [*item.args, *(k.value for k in item.kwargs)]
            if (
                item.dyn_args
                or item.dyn_kwargs
                or not all(isinstance(a, nodes.Const) for a in arguments)
            ):
                what = "an argument computed at build time"
                refuse(item, f"{item.node.name}() with {what}")
    return problems


def _locate(n: int, source_lines: list[str], lines: list[str], offset: int):
    """The file line of the source's line ``n``: the same text nearest
    to where the front matter puts it (exercises change the count)."""
    text = source_lines[n - 1] if 0 < n <= len(source_lines) else None
    guess = n + offset
    found = [i for i, line in enumerate(lines, 1) if line == text]
    return min(found, key=lambda i: abs(i - guess)) if found else guess


def _describe(node) -> str:
    if isinstance(node, nodes.Name):
        return f"'{node.name}'"
    if isinstance(node, nodes.Getattr):
        return f"'{_describe(node.node).strip(chr(39))}.{node.attr}'"
    if isinstance(node, nodes.Call):
        return f"a call of {_describe(node.node)}"
    return f"'{type(node).__name__}'"
