"""MkDocs adapter for lessonbuild.mathrender: typeset math at build time.

Temporary and thin: the lesson plugin will take these events over.

- on_page_content: typeset every formula of the page (one KaTeX process
  per build, each formula once) only to check it and cache it; the page
  keeps its TeX for now, so Material's search indexes each formula once,
  as TeX (mathrender's docstring says why).
- on_env: every page is read; stop KaTeX and fail the build on any TeX
  error, all reported at once, before a file is written.
- on_page_context, after search has indexed the page: put the typeset
  math in, from the cache.
"""

from __future__ import annotations

import os

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority

from lessonbuild.mathrender import MathRenderer

_state: dict = {}


def on_pre_build(config):
    _close()
    _state["renderer"] = MathRenderer()
    _state["problems"] = []


def _path(page, config) -> str:
    root = os.path.dirname(config.config_file_path)
    return os.path.relpath(page.file.abs_src_path, root)


@event_priority(-50)  # after the plugins that put math into the page
def on_page_content(html, page, config, files):
    _, problems = _state["renderer"].render_html(
        html, _path(page, config), page.file.content_string
    )
    _state["problems"].extend(problems)
    return html


def on_env(env, config, files):
    _state["renderer"].close()  # every formula is cached by now
    problems, _state["problems"] = _state["problems"], []
    if problems:
        raise PluginError(
            "\n".join(str(p) for p in problems)
            + f"\n{len(problems)} formula(s) could not be typeset."
        )
    return env


@event_priority(-50)  # after the search plugin has indexed the page
def on_page_context(context, page, config, nav):
    page.content, _ = _state["renderer"].render_html(
        page.content, _path(page, config)
    )
    return context


def on_post_build(config):
    _close()


def on_build_error(error):
    _close()


def _close():
    renderer = _state.pop("renderer", None)
    if renderer is not None:
        renderer.close()
