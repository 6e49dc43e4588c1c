"""MkDocs adapter for the snippet engine (scripts/engine): thin on purpose.

- ``on_config`` (first, priority 100): check every snippet and Output
  block before any page is read; on problems, log them all, remove the
  site folder and abort, so no page is written and no old site stays
  behind looking like the result of this build.
- ``on_build_error``: whatever failed later (another hook, strict-mode
  warnings), the half-written site folder goes too. Under ``mkdocs
  serve`` the folder is a temporary one the server keeps serving, so it
  is emptied and holds one page listing the problems instead.
- ``on_serve``: rebuild when ``snippets/`` or ``mha_ref/`` change; the
  engine's cache re-runs only the snippets whose inputs changed.

The timeout comes from ``SNIPPET_TIMEOUT`` or ``extra.snippet_timeout``.
"""

from __future__ import annotations

import html
import logging
import shutil
from pathlib import Path

from mkdocs.exceptions import Abort
from mkdocs.plugins import event_priority

from scripts import engine
from scripts.engine.cache import find_package

log = logging.getLogger("mkdocs.hooks.engine")
# What this build needs to clean up after itself.
_state: dict = {"command": "build", "config": None, "handled": False}


def on_startup(command, dirty):
    _state["command"] = command


@event_priority(100)
def on_config(config):
    _state.update(config=config, handled=False)
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
    _discard_site(config, result.report())
    _state["handled"] = True
    raise Abort(
        f"Aborted: the snippet engine found {len(result.problems)} "
        f"problem(s), listed above. No site was written."
    )


def on_build_error(error):
    config = _state["config"]
    if config is not None and not _state["handled"]:
        _discard_site(config, f"The build failed:\n\n{error}")


def on_serve(server, config, builder):
    root = Path(config.config_file_path).resolve().parent
    watched = [root / "snippets", find_package("mha_ref", root / "snippets")]
    for path in watched:
        if path is not None and path.exists():
            server.watch(str(path))
    return server


def _discard_site(config, report: str) -> None:
    """Leave no site that looks like the result of a failed build."""
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
    if _state["command"] == "serve":
        # `mkdocs serve` keeps serving this temporary folder: show the
        # problems on every URL until a build succeeds.
        site.mkdir(parents=True, exist_ok=True)
        page = (
            "<!doctype html><meta charset='utf-8'><title>Build failed"
            "</title><h1>The build failed</h1><pre>"
            + html.escape(report)
            + "</pre>"
        )
        for name in ("index.html", "404.html"):
            (site / name).write_text(page, encoding="utf-8")
