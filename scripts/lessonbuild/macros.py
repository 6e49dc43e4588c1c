"""mkdocs-macros module: tables computed by snippets, rendered on slides.

``{{ table("15_trace.shapes") }}`` renders the table a snippet published
with ``mha_ref.publish_table("shapes", ...)`` as a Markdown table;
``{{ table("23_params.by_heads", hide="params") }}`` blanks one column
for a "fill in" slide. ``table_data(id)`` gives the raw
``{"columns": [...], "rows": [[...]]}`` to templates. The data is the
snippet engine's (``lessonbuild.engine.current_tables``); the engine hook
already refused unknown ids with literal arguments before any page was
rendered, and these macros refuse the rest, naming the slide and line.
"""

from __future__ import annotations

from pathlib import Path

from lessonbuild.engine import current_tables, render_table
from lessonbuild.engine.engine import (
    unknown_column_message,
    unknown_table_message,
)


def define_env(env):
    root = Path(env.project_dir).resolve()

    def lookup(table_id):
        tables = current_tables(root)
        if table_id not in tables:
            raise ValueError(
                _where(env, root, table_id)
                + unknown_table_message(table_id, sorted(tables))
            )
        return tables[table_id]

    @env.macro
    def table(table_id, hide=None):
        """The published table ``table_id`` as Markdown."""
        data = lookup(table_id)
        if hide is not None and hide not in data["columns"]:
            raise ValueError(
                _where(env, root, table_id)
                + unknown_column_message(table_id, hide, data["columns"])
            )
        return render_table(data, hide)

    @env.macro
    def table_data(table_id):
        """The published table ``table_id``: columns and rows."""
        return lookup(table_id)


def _where(env, root: Path, table_id: str) -> str:
    """``docs/slides/x.md:12: `` for the macro call naming ``table_id``."""
    try:
        path = Path(env.page.file.abs_src_path).resolve()
    except AttributeError:
        return ""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = str(path)
    line = 1
    try:
        text = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        text = []
    for i, content in enumerate(text, 1):
        if table_id in content and "{{" in content:
            line = i
            break
    return f"{rel}:{line}: "
