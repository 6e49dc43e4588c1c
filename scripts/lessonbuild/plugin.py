"""The lesson's one MkDocs plugin (``- lesson:`` in mkdocs.yml): each
hook hands off to one method of ``build.Build``, which owns the state;
the priorities place each hook among the other plugins'."""

from __future__ import annotations

import warnings
from pathlib import Path

from mkdocs.exceptions import Abort
from mkdocs.plugins import BasePlugin, CombinedEvent, event_priority

from .build import Build
from .settings import Settings, SettingsError


class LessonPlugin(BasePlugin):
    supports_multiple_instances = False

    def __init__(self):
        self.build = Build()
        self.settings = Settings()

    def load_config(self, options, config_file_path=None):
        """Validate the settings (one schema with the CLI), then start the
        first fork server (``Build.prestart``)."""
        errors, warns = super().load_config({}, config_file_path)
        try:
            self.settings = Settings.from_mapping(dict(options))
        except SettingsError as exc:
            return [*errors, (exc.name or "lesson", str(exc))], warns
        if config_file_path:
            self.build.prestart(Path(config_file_path).resolve().parent)
        return errors, warns

    def on_startup(self, *, command, dirty):
        """Defined, so that ``serve`` keeps this instance (its fork servers,
        its caches) across rebuilds."""
        pool, self.build.pool = self.build.pool, None
        self.build = Build(command, dirty)
        self.build.pool = pool  # started by load_config

    def on_shutdown(self):
        self.build.shutdown()

    @event_priority(100)
    def on_config(self, config):
        # mkdocs-macros uses pathspec's deprecated "gitwildmatch": two
        # tracebacks a build that no contributor can fix.
        warnings.filterwarnings(
            "ignore", "GitWildMatchPattern", DeprecationWarning, "pathspec"
        )
        try:
            return self.build.start(config, self.settings)
        except SettingsError as exc:
            raise Abort(str(exc)) from None

    def on_pre_build(self, *, config):
        self.build.pre_build()

    def _add_files(self, files, *, config):
        return self.build.add_files(files, config)

    @event_priority(-100)  # after mkdocs-jupyter wraps the notebooks
    def _answers_out_of_nav(self, files, *, config):
        return self.build.answers_out_of_nav(files)

    on_files = CombinedEvent(_add_files, _answers_out_of_nav)

    @event_priority(-100)  # after every plugin's on_files
    def on_nav(self, nav, *, config, files):
        self.build.plan(config, files)
        return nav

    def on_pre_page(self, page, *, config, files):
        self.build.pre_page(page)
        return page

    def on_page_read_source(self, *, page, config):
        return self.build.source(page)

    def on_page_markdown(self, markdown, *, page, config, files):
        return self.build.markdown(markdown, page, config)

    @event_priority(-50)  # after every plugin that puts math in the page
    def on_page_content(self, html, *, page, config, files):
        return self.build.page_content(html, page, config)

    def on_env(self, env, *, config, files):
        self.build.env(env, files)
        return env

    @event_priority(-100)  # after every step that changes the content
    def on_page_context(self, context, *, page, config, nav):
        self.build.page_context(page)
        return context

    @event_priority(-100)  # the last word on every page
    def on_post_page(self, output, *, page, config):
        return self.build.failure_page() if self.build.failure else output

    @event_priority(50)  # before the search plugin writes its index
    def _finish(self, *, config):
        self.build.finish(config)

    @event_priority(-1000)  # after every plugin wrote into the site
    def _publish_site(self, *, config):
        self.build.publish_site(config)

    on_post_build = CombinedEvent(_finish, _publish_site)

    def on_build_error(self, *, error):
        self.build.error()

    def on_serve(self, server, *, config, builder):
        self.build.serve(server, config)
        return server
