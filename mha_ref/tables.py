"""Hand table rows and single figures from a snippet to the site build.

Slides never type shape or parameter tables by hand: a snippet computes the
values and publishes them here, and the build renders them. When a snippet
runs on its own (``python snippets/15_trace.py``) no build is listening and
``publish_table`` does nothing, so the snippet prints only its lesson output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

#: Environment variable naming the JSON-lines file the engine collects.
TABLES_ENV = "MHA_REF_TABLES_FILE"


def shape_str(shape: Sequence[int]) -> str:
    """Format a shape the way the lesson writes it: ``(1, 4, 8)``."""
    dims = tuple(int(d) for d in shape)
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join(str(d) for d in dims) + ")"


def publish_table(
    name: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
) -> None:
    """Record a table for the build; a no-op when no build is listening.

    ``name`` is local to the snippet: the build files it under
    ``<snippet stem>.<name>`` (``15_trace.shapes``). Every cell is shown as
    ``str(cell)``, so format numbers before publishing (``f"{n:,}"``).
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            f"table name must be a Python identifier, got {name!r}"
        )
    columns = [str(c) for c in columns]
    if not columns:
        raise ValueError(f"table {name!r} has no columns")
    cells = []
    for i, row in enumerate(rows):
        row = [str(c) for c in row]
        if len(row) != len(columns):
            raise ValueError(
                f"table {name!r} row {i} has {len(row)} cells, "
                f"expected {len(columns)} ({', '.join(columns)})"
            )
        cells.append(row)
    path = os.environ.get(TABLES_ENV)
    if not path:
        return
    record = {"name": name, "columns": columns, "rows": cells}
    with open(path, "a", encoding="utf-8") as sink:
        sink.write(json.dumps(record, ensure_ascii=False) + "\n")


def publish_value(name: str, value: object) -> None:
    """Record one figure for the build (``{{ value("23_params.total") }}``).

    For numbers the prose restates (a parameter count, a shape): the
    slide shows what the run computed, never a number typed by hand.
    Shown as ``str(value)``, so format it first (``f"{n:,}"``). A no-op
    when no build is listening.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(
            f"value name must be a Python identifier, got {name!r}"
        )
    path = os.environ.get(TABLES_ENV)
    if not path:
        return
    record = {"kind": "value", "name": name, "text": str(value)}
    with open(path, "a", encoding="utf-8") as sink:
        sink.write(json.dumps(record, ensure_ascii=False) + "\n")
