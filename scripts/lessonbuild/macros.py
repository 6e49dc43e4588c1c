"""The slides' template language: ``{{ table(...) }}`` and its kin, and
nothing else.

``{{ table("15_trace.shapes") }}`` renders the table a snippet published
with ``mha_ref.publish_table("shapes", ...)`` as a Markdown table;
``{{ table("23_params.by_heads", hide="params") }}`` blanks one column
for a "fill in" slide; ``{{ value("23_params.total") }}`` is one figure
a snippet published with ``mha_ref.tables.publish_value("total", ...)``,
for prose that restates a computed number; ``{{ figure("id") }}`` a
published figure; ``{{ ref("40-stem") }}`` is "slide 40" and
``{{ ref("exercise", "option") }}`` an option's letter, computed from
ids (lessonbuild/exercises/refs.py). The data is the lesson plugin's
(its snippet engine ran in ``on_config``, before any page).

A slide is data, not code (issue 31): ``Templates`` renders each page
with a sandboxed Jinja environment (``jinja2.sandbox``) whose only names
are the macros ``define_env`` defines, and before rendering it refuses,
at file and line, anything but a call of one of them with literal
arguments: no attribute (``cycler.__init__.__globals__``), no
arithmetic, no filter, no statement, no table id computed at run time.
Fenced blocks (code, Output) are published literally: wrapped in
``{% raw %}`` for Jinja, and in an Output block every line
pymdownx.snippets would act on (``--8<--``) escaped, so what is
published is what the engine compared. The same check runs in ``make
fastcheck`` (``template_problems``).
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
from lessonbuild.engine.tables import (
    unknown_column_message,
    unknown_table_message,
)
from lessonbuild.problems import Problem
from lessonbuild.settings import PLUGIN_NAME


def define_env(env):
    """The macros a slide may call: each ``@env.macro`` function."""

    def plugin():
        found = env.conf.plugins.get(PLUGIN_NAME)
        found = found.build if found is not None else None  # build.Build
        if found is None or found.result is None:
            raise ValueError(
                "table(): the lesson plugin is not configured; expected "
                f"'- {PLUGIN_NAME}' under plugins in mkdocs.yml"
            )
        return found

    @env.macro
    def table(table_id, hide=None, indent=0):
        """The published table ``table_id`` as Markdown; ``indent``
        spaces before every line after the first put it inside a fold
        (``??? verify``) whose body is indented."""
        lesson = plugin()
        tables = lesson.result.tables
        if table_id not in tables:
            raise ValueError(
                _where(env, lesson, table_id)
                + unknown_table_message(table_id, sorted(tables))
            )
        data = tables[table_id]
        if hide is not None and hide not in data["columns"]:
            raise ValueError(
                _where(env, lesson, table_id)
                + unknown_column_message(table_id, hide, data["columns"])
            )
        return render_table(data, hide).replace("\n", "\n" + " " * indent)

    @env.macro
    def value(value_id):
        """The figure a snippet published with ``publish_value``: prose
        restating a computed number shows the number the run computed
        (as plain text: escaped)."""
        lesson = plugin()
        values = lesson.result.values
        if value_id not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(
                _where(env, lesson, value_id)
                + f"value({value_id!r}): no snippet published this value; "
                f"known values: {known}"
            )
        return escape(str(values[value_id]))

    @env.macro
    def figure(figure_id):
        """The published figure ``figure_id``: an image with its alt text.

        The SVG itself is written to ``figures/<id>.svg`` by the plugin;
        the link is relative, so the page works from disk too.
        """
        lesson = plugin()
        data = lesson.result.figures.get(figure_id)
        if data is None:
            raise ValueError(
                _where(env, lesson, figure_id)
                + f"figure({figure_id!r}): no snippet published this figure"
            )
        depth = env.page.url.count("/") if env.page else 0
        src = "../" * depth + f"figures/{figure_id}.svg"
        return (
            f'<figure class="lesson-figure"><img src="{escape(src)}" '
            f'alt="{escape(data["alt"])}" loading="lazy"></figure>'
        )

    @env.macro
    def class_period():
        """ "120 min + homework": every slide's "Time: N min" from the
        instructor notes, added up (the speaker view says the same)."""
        return present.class_period(plugin().deck)

    @env.macro
    def ref(target, option=None, to=None, cap=False):
        """``slide N`` (linked), ``slides N–M``, or an option's letter,
        computed from ids (lessonbuild/exercises/refs.py): a slide moved
        or an option reordered renders the new number or letter."""
        lesson = plugin()
        try:
            return lesson.refs.render(
                target, option, page=env.page.file.src_uri, to=to, cap=cap
            )
        except ValueError as exc:
            raise ValueError(_where(env, lesson, target) + str(exc)) from None

    @env.macro
    def part_contents():
        """A slide's part, the other slides of it in order: a numbered
        list of their titles, each linked, read from the slides' front
        matter (a Section slide's contents, never typed again)."""
        lesson = plugin()
        here = lesson.deck.page_at(env.page.file.src_uri)
        if here is None:
            raise ValueError(
                f"{env.page.file.src_uri}:1: part_contents(): only a slide "
                "has a part; call it on a slide under docs/slides/"
            )
        folder = posixpath.dirname(lesson.deck.docs_rel(here))
        others = [s for s in lesson.deck.slides if s.part == here.part]
        return "\n".join(
            f"{i}. [{escape(s.title)}]"
            f"({posixpath.relpath(lesson.deck.docs_rel(s), folder)})"
            for i, s in enumerate((s for s in others if s is not here), 1)
        )

    @env.macro
    def lesson_parts():
        """The home page's parts: slides, minutes (from the notes' Time
        lines) and the student's progress (exercises.js), computed."""
        from lessonbuild.exercises.progress import parts_overview

        lesson = plugin()
        return parts_overview(
            lesson.deck,
            lesson.settings.storage_prefix,
            page_uri=env.page.file.src_uri,
        )


def _where(env, lesson, table_id: str) -> str:
    """``docs/slides/NN-slug.md:12: `` for the call naming ``table_id``."""
    deck = lesson.deck
    try:
        src_uri = env.page.file.src_uri
    except AttributeError:
        return ""
    for page in deck.pages if deck else []:
        if deck.docs_rel(page) != src_uri:
            continue
        for i, line in enumerate(page.lines, 1):
            if table_id in line and "{{" in line:
                return f"{page.path}:{i}: "
        return f"{page.path}:1: "
    return ""


class TemplateProblem(ValueError):
    """A page's template refused, as problems at file and line."""

    def __init__(self, problems: list[Problem]):
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


class Templates:
    """The one template environment of a build (plugin: ``render``)."""

    def __init__(self, conf=None):
        self.conf = conf
        self.page = None
        self.macros: dict = {}
        define_env(self)
        self.jinja = SandboxedEnvironment(undefined=StrictUndefined)
        # Jinja's own globals (range, dict, cycler, joiner, lipsum,
        # namespace) are not the slides' to call.
        self.jinja.globals = dict(self.macros)

    def macro(self, function):
        """``@env.macro``, as mkdocs-macros spells it."""
        self.macros[function.__name__] = function
        return function

    def render(self, markdown: str, page, path: str, lines: list[str]):
        """The page's Markdown with its macro calls replaced.

        ``path`` and ``lines``: the page's file and its lines, to name a
        refused construct at its line (``markdown`` has lost the front
        matter). Raises ``TemplateProblem``.
        """
        lines = [line.rstrip("\r\n") for line in lines]
        source, problems = literal_fences(markdown, path, lines)
        if not problems:
            problems = check_calls(source, path, lines, set(self.macros))
        if problems:
            raise TemplateProblem(problems)
        self.page = page
        try:
            return self.jinja.from_string(source).render()
        except TemplateProblem:
            raise
        except Exception as exc:  # a macro's own error names its line
            text = str(exc)
            if not re.match(r"^\S+:\d+: ", text):
                text = f"{path}:1: {text}"
            where, line, message = text.split(":", 2)
            raise TemplateProblem(
                [Problem(where, int(line), message.strip())]
            ) from None
        finally:
            self.page = None


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
_ENDRAW = re.compile(r"\{%-?\s*(end)?raw\s*-?%\}")
_INCLUDE = SnippetPreprocessor.RE_ALL_SNIPPETS
_SECTION = SnippetPreprocessor.RE_SNIPPET_SECTION
_OUTPUT = re.compile(r"""title\s*=\s*["']Output["']""")


def _offset(markdown: str, lines: list[str]) -> int:
    """How many file lines precede the Markdown (its front matter)."""
    count = len(markdown.split("\n"))
    total = len(lines)
    if lines and lines[-1] == "":
        total -= 1
    return max(0, total - count + (1 if markdown.endswith("\n") else 0))


def literal_fences(markdown: str, path: str, lines: list[str]):
    """(source, problems): every fenced block wrapped in ``{% raw %}``
    (the tags share the fence lines, so line numbers stay); in an Output
    block, every line that pymdownx.snippets would expand or drop
    escaped with its ``;`` (it shows the line without it)."""
    out, problems = [], []
    offset = _offset(markdown, lines)
    open_marker, output = None, False
    for n, line in enumerate(markdown.split("\n"), 1):
        m = _FENCE.match(line)
        if open_marker is None:
            if m and not (m["marker"][0] == "`" and "`" in m["info"]):
                open_marker, output = (
                    m["marker"],
                    bool(_OUTPUT.search(m["info"])),
                )
                line = "{% raw %}" + line
            out.append(line)
            continue
        if (
            m
            and m["marker"][0] == open_marker[0]
            and len(m["marker"]) >= len(open_marker)
            and not m["info"].strip()
        ):
            open_marker = None
            out.append(line + "{% endraw %}")
            continue
        if _ENDRAW.search(line):
            problems.append(
                Problem(
                    path,
                    n + offset,
                    "a code block may not contain a Jinja raw tag "
                    "({% raw %} / {% endraw %}): code blocks are "
                    "published literally",
                )
            )
        if output:
            line = _escape_include(line)
        out.append(line)
    if open_marker is not None:
        out[-1] += "{% endraw %}"
    return "\n".join(out), problems


def _escape_include(line: str) -> str:
    """``line`` as pymdownx.snippets will show it literally: one more
    ``;`` before a marker it would act on (it removes one)."""
    m = _INCLUDE.match(line)
    if m:
        return line[: m.start("escape")] + ";" + line[m.start("escape") :]
    m = _SECTION.match(line)
    if m:
        return line[: m.start("escape")] + ";" + line[m.start("escape") :]
    return line


def check_calls(source: str, path: str, lines: list[str], names: set[str]):
    """Problems for everything in ``source`` but text and calls of
    ``names`` with literal arguments."""
    offset = _offset(source, lines)
    allowed = ", ".join(f"{{{{ {n}(...) }}}}" for n in sorted(names))
    env = SandboxedEnvironment()
    try:
        tree = env.parse(source)
    except TemplateSyntaxError as exc:
        return [
            Problem(
                path,
                (exc.lineno or 1) + offset,
                f"template syntax error: {exc.message}; only {allowed} "
                "may appear on a page (a literal {{ goes in a code block)",
            )
        ]
    problems = []
    source_lines = source.split("\n")

    def refuse(node, what):
        problems.append(
            Problem(
                path,
                _locate(node.lineno, source_lines, lines, offset),
                f"{what} is not allowed in a page's template: only "
                f"{allowed} with literal arguments (strings, numbers) "
                "may appear (a literal {{ goes in a code block)",
            )
        )

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
                refuse(
                    item,
                    f"{item.node.name}() with an argument computed at "
                    "build time",
                )
    return problems


def _locate(n: int, source_lines: list[str], lines: list[str], offset: int):
    """The file line of the source's line ``n``: the file line with the
    same text nearest to where the front matter puts it (exercise fences
    may have changed the count before it)."""
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


def template_problems(page) -> list[Problem]:
    """The refusals ``Templates.render`` would make for a deck page (its
    whole text, front matter included): for ``make fastcheck``."""
    lines = [line.rstrip("\r\n") for line in page.lines]
    text = "\n".join(lines)
    names = set(Templates().macros)
    source, problems = literal_fences(text, page.path, lines)
    return problems or check_calls(source, page.path, lines, names)
