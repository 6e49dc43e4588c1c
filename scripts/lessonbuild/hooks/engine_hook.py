"""MkDocs adapter for the snippet engine (lessonbuild.engine): thin.

- ``on_config`` (first, priority 100): check every snippet and Output
  block before any page is read; on problems, log them all, remove the
  site folder and abort, so no page is written and no old site stays
  behind looking like the result of this build.
- ``on_build_error``: whatever failed later (another hook, strict-mode
  warnings), the half-written site folder goes too. Not under ``mkdocs
  serve``: its temporary folder is never served after a failed build
  (MkDocs holds page requests until a build succeeds).
- ``on_serve``: rebuild when ``snippets/`` or ``mha_ref/`` change; the
  engine's cache re-runs only the snippets whose inputs changed.

The timeout comes from ``SNIPPET_TIMEOUT`` or ``extra.snippet_timeout``.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from mkdocs.exceptions import Abort
from mkdocs.plugins import event_priority

from lessonbuild import engine
from lessonbuild.engine.cache import find_package

log = logging.getLogger("mkdocs.hooks.engine")
# The command (build, serve, gh-deploy) and this build's config.
_state: dict = {"command": "build", "config": None}


def on_startup(command, dirty):
    _state["command"] = command


@event_priority(100)
def on_config(config):
    _state["config"] = config
    root = Path(config.config_file_path).resolve().parent
    try:
        timeout = engine.resolve_timeout(None, root, config.extra)
    except ValueError as exc:
        raise Abort(f"snippet engine: {exc}") from None
    result = engine.check(root, docs_dir=config.docs_dir, timeout=timeout)
    if result.ok:
        log.info(result.summary())
        return config
    for problem in result.problems:
        log.error(str(problem))
    if any(p.kind == "drift" for p in result.problems):
        log.error(f"If the new output is right, accept it: {result.accept}")
    _discard_site(config)
    raise Abort(
        f"Aborted: the snippet engine found {len(result.problems)} "
        f"problem(s), listed above. No site was written."
    )


def on_build_error(error):
    if _state["config"] is not None:
        _discard_site(_state["config"])


def on_serve(server, config, builder):
    root = Path(config.config_file_path).resolve().parent
    watched = [root / "snippets", find_package("mha_ref", root / "snippets")]
    for path in watched:
        if path is not None and path.exists():
            server.watch(str(path))
    return server


def _discard_site(config) -> None:
    """Leave no site that looks like the result of a failed build."""
    if _state["command"] == "serve":
        # `mkdocs serve` holds every page request after a failed build
        # until a build succeeds: it never shows this folder meanwhile.
        return
    site = Path(config.site_dir).resolve()
    root = Path(config.config_file_path).resolve().parent
    docs = Path(config.docs_dir).resolve()
    # Never delete the project, the docs or anything above them.
    if site in (root, docs) or root.is_relative_to(site):
        log.warning(f"not removing site_dir {site}: it holds the project")
        return
    if docs.is_relative_to(site) or not site.is_dir():
        return
    shutil.rmtree(site, ignore_errors=True)
