"""The executable snippet engine: run snippets, check outputs, tables.

Plain Python, usable without MkDocs (``python -m lessonbuild.engine``); the
MkDocs adapter is ``scripts/lessonbuild/hooks/engine_hook.py``. Importing this
package never imports torch: only a run of a snippet whose result is not
cached starts the fork servers that do.
"""

from .engine import (
    DEFAULT_TIMEOUT,
    EngineError,
    Problem,
    Result,
    check,
    current_tables,
    forget,
    last_result,
    resolve_timeout,
    update,
)
from .tables import render_table

__all__ = [
    "DEFAULT_TIMEOUT",
    "EngineError",
    "Problem",
    "Result",
    "check",
    "current_tables",
    "forget",
    "last_result",
    "render_table",
    "resolve_timeout",
    "update",
]
