"""mkdocs-macros module: tables computed by snippets, rendered on slides.

``{{ table("15_trace.shapes") }}`` renders the table a snippet published
with ``mha_ref.publish_table("shapes", ...)`` as a Markdown table;
``{{ table("23_params.by_heads", hide="params") }}`` blanks one column
for a "fill in" slide; ``{{ value("23_params.total") }}`` is one figure
a snippet published with ``mha_ref.tables.publish_value("total", ...)``,
for prose that restates a computed number; ``{{ ref("40-stem") }}`` is
"slide 40" and ``{{ ref("exercise", "option") }}`` an option's letter,
computed from ids (lessonbuild/exercises/refs.py). The data is the lesson
plugin's (its snippet engine ran in ``on_config``, before any page),
which already refused unknown ids given as literals; this macro refuses
the rest, naming the page and line of the call.
"""

from __future__ import annotations

from html import escape

from lessonbuild.engine import render_table
from lessonbuild.engine.tables import (
    unknown_column_message,
    unknown_table_message,
)
from lessonbuild.settings import PLUGIN_NAME


def define_env(env):
    def plugin():
        found = env.conf.plugins.get(PLUGIN_NAME)
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
        restating a computed number shows the number the run computed."""
        lesson = plugin()
        values = lesson.result.values
        if value_id not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(
                _where(env, lesson, value_id)
                + f"value({value_id!r}): no snippet published this value; "
                f"known values: {known}"
            )
        return values[value_id]

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
