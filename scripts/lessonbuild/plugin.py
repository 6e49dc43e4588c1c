"""The lesson's one MkDocs plugin: deck -> checks -> pages -> site.

The order of the build, in one place (each step is a method below):

0. ``load_config``: while MkDocs loads the other plugins, the engine's
   seed-0 fork server starts importing torch, if a snippet will run.
1. ``on_config``: read the deck once (``deck.read_deck``), run the
   snippet engine on it, validate and render every exercise, and build
   the nav from the slides' front matter. Every problem of all three is
   reported together and the build stops before a page is read, leaving
   no site folder behind. Then the homework notebooks start
   (``notebooks.Homework``, a kernel forked from the engine's server,
   waited for in ``on_pre_page``) while the pages render.
2. ``on_page_read_source``: MkDocs renders the text the deck read and
   the engine checked (exercise fences swapped for placeholders), never
   a second read of the file, so what is published is what was checked.
3. ``on_page_content``: the placeholders become the exercise widgets,
   and the instructor notes are kept out of the search index.
   Right after the snippets ran, every file under docs/, snippets/ and
   mha_ref/ must be as it was before: a snippet that wrote, created or
   deleted one fails the build, naming the file.
4. ``on_page_context`` (last): keep each page's final content, then
   typeset its math; ``on_post_build`` judges the snippets' second runs
   (a build renders its pages while they run; a disagreement fails the
   build, and the guarded files are checked again), then writes the
   reveal.js deck ``present.html`` from the slides' contents
   (``present.py``) and typesets the deck's math from the same cache.
5. ``on_build_error``: a failed build leaves no site folder that looks
   finished.

State lives on the plugin instance, never in module globals, so the
macros module (``{{ table(...) }}``) reads the tables from here.

Under ``mkdocs serve`` MkDocs keeps this instance across rebuilds, and a
rebuild redoes only what an edit changed: the fork servers stay up (an
edited snippet runs at once), typeset formulas are kept
(``self.formulas``), and so are each page's rendered exercises
(``self.exercise_pages``), each slide's deck sections
(``present.slide_sections``), each page's minified HTML (the
``lesson-minify`` plugin, ``minify.py``) and the theme's compiled
templates (``.cache/templates``, ``themeenv.py``). Under ``mkdocs serve
--dirty`` (``make serve``), MkDocs renders only the pages whose inputs
changed (``rebuild.py``, from ``on_nav`` to ``on_post_build``).
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
import warnings
from html import escape as html_escape
from pathlib import Path

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import Abort
from mkdocs.plugins import BasePlugin, event_priority

from . import engine, exercises, notebooks, present, searchtext, themeenv
from .deck import Deck, read_deck
from .mathrender import MathRenderer
from .problems import Problem, report
from .rebuild import QuietDirtyWarning, Rebuild
from .settings import (
    SCHEMA,
    SLIDES_FILE,
    Settings,
    SettingsError,
    cache_dir,
)
from .slidecache import SlideCache

log = logging.getLogger("mkdocs.plugins.lesson")
#: The notebooks the build makes, in the nav's order.
NOTEBOOK_TITLES = (
    notebooks.DECK_NOTEBOOK,
    *notebooks.HOMEWORK,
)
#: Folders whose files snippets must not change while they run.
GUARDED = ("docs", "snippets", "mha_ref")


def _typed(kind, default):
    if kind is float:  # `snippet_timeout: 5` is a number of seconds too
        return c.Type((int, float), default=default)
    if kind is list:
        return c.ListOfItems(c.Type(str), default=list(default))
    return c.Type(kind, default=default)


#: Typed from ``settings.SCHEMA``: the plugin and the CLI share it.
LessonConfig = type(
    "LessonConfig",
    (base.Config,),
    {
        name: _typed(kind, default)
        for name, (kind, default, _) in SCHEMA.items()
    },
)


def _quiet_library_warnings():
    """Silence the one library warning every build printed.

    mkdocs-macros-plugin reads its ``force_render_paths`` as pathspec
    "gitwildmatch" patterns, which pathspec 1.x deprecates. The
    ``mkdocs`` command shows every DeprecationWarning, so each build
    logged two tracebacks that no contributor can fix. Only that
    warning is silenced (the lesson plugin's ``on_config`` runs first),
    in every build: ``mkdocs``, ``make serve`` and the tests' own.
    """
    warnings.filterwarnings(
        "ignore",
        message="GitWildMatchPattern",
        category=DeprecationWarning,
        module="pathspec",
    )


class LessonPlugin(BasePlugin[LessonConfig]):
    supports_multiple_instances = False

    def __init__(self):
        self.command = "build"
        self.deck: Deck | None = None
        self.result: engine.Result | None = None
        self.settings = Settings()
        self.sources: dict[str, str] = {}  # src_uri -> text to render
        self.widgets: dict[str, dict[str, str]] = {}  # src_uri -> html
        self.problems: list[Problem] = []
        self.fingerprint: dict[str, str] = {}
        self.mkdocs_config = None
        self.rendered: dict[str, str] = {}  # src_uri -> final content
        self.math: MathRenderer | None = None
        # (TeX, display) -> KaTeX's HTML, kept across serve rebuilds.
        self.formulas: dict[tuple[str, bool], str] = {}
        # (page, its text, what else it renders from) -> exercises'
        # render_page result, kept from the last build (serve).
        self.exercise_pages: dict[tuple, exercises.PageResult] = {}
        self.pool = None  # fork servers (serve: kept across rebuilds)
        self.slides: SlideCache | None = None  # parsed slides, kept too
        # `mkdocs serve --dirty`: which pages a rebuild renders.
        self.rebuild: Rebuild | None = None
        self.nav = None
        self.homework: notebooks.Homework | None = None
        self.converting: notebooks.Converting | None = None
        # serve --dirty: notebook pages converting for the next rebuild.
        self.converting_next: notebooks.Converting | None = None
        self.rebuild_trigger: Path | None = None
        self.notebooks_made: dict = {}  # the deck notebook's inputs (serve)
        self.theme_files: dict = {}  # the installed theme's file list

    def load_config(self, options, config_file_path=None):
        """MkDocs reads this plugin's settings first and then loads the
        other plugins, a second or two on one core: meanwhile the
        seed-0 fork server imports torch (``engine.prestart``, only if
        a snippet has no cached run). Under ``serve`` the kept pool's
        servers are already up."""
        errors, warnings = super().load_config(options, config_file_path)
        if not errors and config_file_path and self.pool is None:
            root = Path(config_file_path).resolve().parent
            engine.prestart(root, cache_dir(root), self._pool(root))
        return errors, warnings

    # --- 1. read, check, render exercises, nav -----------------------------

    def on_startup(self, *, command, dirty):
        """Once per ``mkdocs`` run. Under ``serve`` MkDocs keeps this
        instance across rebuilds (its ``on_startup`` says so), so the
        snippet engine's fork servers stay up between them: an edited
        snippet re-runs at once, without an interpreter or torch to
        start (``engine.runner.Pool``); ``on_shutdown`` stops them.

        With ``--dirty`` (``make serve``), a rebuild renders only the
        pages an edit changed (``rebuild.Rebuild``), and MkDocs' warning
        that dirty builds are inaccurate is dropped: here they are not.
        """
        self.command = command
        if command == "serve" and dirty:
            self.rebuild = Rebuild()
            QuietDirtyWarning.install()

    def on_shutdown(self):
        self._end_converting()
        self._end_converting_next()
        self._cancel_homework()
        self._close_pool()

    def _close_pool(self):
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def _pool(self, root: Path):
        """The snippet engine's fork servers: kept for the whole of a
        ``mkdocs serve``; for a build, until ``on_post_build`` has
        collected what they ran in the background (the second runs,
        the homework) or the build failed."""
        if self.pool is None or self.pool.root != root:
            from .engine.runner import Pool

            self._close_pool()
            self.pool = Pool(root)
        return self.pool

    @event_priority(100)
    def on_config(self, config):
        _quiet_library_warnings()
        self.mkdocs_config = config
        self.failure = None  # serve: this build's problems, as a page
        root = Path(config.config_file_path).resolve().parent
        try:
            self.settings = Settings.from_mapping(dict(self.config))
            timeout = self.settings.timeout()
            jobs = self.settings.job_count()
        except SettingsError as exc:
            raise Abort(str(exc)) from None
        # Every Jinja environment of this build (MkDocs', the search
        # plugin's) reads compiled templates from .cache/templates and
        # lists the installed theme once (themeenv.py).
        themeenv.keep(
            config, cache_dir(root).parent / "templates", self.theme_files
        )
        self.fingerprint = fingerprint(root)
        slides = cache_dir(root) / SLIDES_FILE
        if self.slides is None or self.slides.path != slides:
            self.slides = SlideCache(slides)
        deck = read_deck(
            root, config.docs_dir, self.settings.parts, cache=self.slides
        )
        self.deck = deck
        self._cancel_homework()  # serve: an earlier build's, if unfinished
        problems = list(deck.problems)
        self.result = engine.check(
            deck,
            timeout=timeout,
            jobs=jobs,
            cache_dir=cache_dir(root),
            output_limits=self.settings.output_limits(),
            pool=self._pool(root),
            warm=self.command == "serve",
            # A build renders its pages while each snippet's second run
            # goes on (on_post_build judges them); serve re-runs only
            # what an edit changed, and shows the verdict at once.
            defer_second=self.command != "serve",
        )
        exercise_problems = self._render_exercises(config, deck)
        if problems or self.result.problems or exercise_problems:
            self.result.finish()  # every problem at once: theirs too
        problems += self.result.problems
        problems += tampering(self.fingerprint, fingerprint(root))
        problems += exercise_problems
        if problems:
            self._fail(config, problems, self.result.advice())
        else:
            self._start_homework(deck)
        log.info(self.result.summary())
        config.nav = self._nav(config.nav, deck)
        # "N / 55" in the slide header (overrides/main.html).
        config.extra["slide_count"] = len(deck.slides)
        return config

    def _render_exercises(self, config, deck: Deck) -> list[Problem]:
        fragments = None  # made on the first page not rendered before
        problems = []
        self.sources, self.widgets = {}, {}
        tables = self.result.tables if self.result else {}
        # A page renders the same for the same text, tables, Markdown
        # settings and storage prefix: under serve, the pages an edit
        # did not touch are taken from the last build.
        context = repr(
            (
                sorted(tables.items()),
                config.markdown_extensions,
                config.mdx_configs,
                self.settings.storage_prefix,
            )
        )
        kept, self.exercise_pages = self.exercise_pages, {}
        found = []  # (path, exercise) over the deck, for check_spread
        for page in deck.pages:
            src_uri = deck.docs_rel(page)
            url = src_uri[: -len(".md")] + ".html"
            key = (src_uri, page.path, page.text, context)
            out = kept.get(key)
            if out is None:
                if fragments is None:
                    fragments = exercises.Fragments(
                        config.markdown_extensions, config.mdx_configs
                    )
                out = exercises.render_page(
                    page,
                    url=url,
                    fragments=fragments,
                    tables=tables,
                    key_prefix=self.settings.storage_prefix,
                )
            self.exercise_pages[key] = out
            problems += out.problems
            found += [(page.path, ex) for ex in out.exercises]
            self.sources[src_uri] = out.text
            self.widgets[src_uri] = out.html
        return problems + exercises.check_spread(found)

    def _nav(self, nav, deck: Deck):
        """The configured nav (Home, ...) followed by the lesson's parts."""
        nav = list(nav or [])
        if not nav and (deck.docs / "index.md").is_file():
            nav = [{"Home": "index.md"}]
        for part in deck.parts:
            nav.append({part.name: [deck.docs_rel(s) for s in part.slides]})
        if deck.slides:
            # The homework this build makes: none where its source is
            # missing (a fixture), or where the checks failed and
            # serve shows the problems instead (a nav entry without its
            # page would be one more warning, failing a strict build).
            homework = self.homework.uris if self.homework else []
            made = [
                # The deck notebook's own heading is the lesson's title:
                # named for what it is, "Next" after the last slide
                # does not read as the lesson's first slide.
                {"The lesson as a notebook": uri}
                if uri == notebooks.DECK_NOTEBOOK
                else uri
                for uri in NOTEBOOK_TITLES
                if uri not in notebooks.HOMEWORK or uri in homework
            ]
            nav.append({"Notebooks": made})
        return nav

    # --- figures and notebooks: build products ------------------------------

    def on_files(self, files, *, config):
        """Add the figures and notebooks this build makes.

        Figures go to figures/<id>.svg, where ``{{ figure(id) }}`` points.

        Written under .cache/notebooks (never committed): the deck's from
        the engine's verified outputs, the homework from notebooks/*.py,
        the solutions executed (cached by content). Listed before
        mkdocs-jupyter in mkdocs.yml, so its on_files sees them.
        """
        from mkdocs.structure.files import File

        # Figures snippets published: build products, like the tables.
        for figure_id, data in (
            self.result.figures if self.result else {}
        ).items():
            files.append(
                File.generated(
                    config, f"figures/{figure_id}.svg", content=data["svg"]
                )
            )
        if self.deck is None or not self.deck.slides:
            return files

        folder = notebooks.write_deck_notebook(
            self.deck, self.result.outputs, self.notebooks_made
        )
        uris = [notebooks.DECK_NOTEBOOK]
        uris += self.homework.uris if self.homework else []
        for uri in uris:
            files.append(
                File(
                    uri,
                    str(folder),
                    config.site_dir,
                    config.use_directory_urls,
                )
            )
        return files

    def _start_homework(self, deck: Deck) -> None:
        """Start the homework notebooks (``notebooks.Homework``) on the
        engine's fork server, now that the snippets have run: the kernel
        runs while the pages render; ``on_pre_page`` waits for it."""
        self._cancel_homework()
        if deck.slides:
            from .engine.cache import base_key

            key = base_key(deck.root / "snippets")
            self.homework = notebooks.Homework(deck.root, key, self.pool)

    def _cancel_homework(self) -> None:
        homework, self.homework = self.homework, None
        if homework is not None:
            homework.cancel()

    @event_priority(-100)  # after every plugin's on_files
    def on_nav(self, nav, *, config, files):
        """Convert the notebooks already written (the deck's, the
        starter) in the background while the slides render
        (``notebooks.Converting``).

        Under ``mkdocs serve --dirty``, first decide which pages this
        rebuild renders (``_plan_rebuild``); a notebook page whose
        conversion is not cached is left to a later rebuild, which the
        conversion asks for when it ends (a rebuild that starts before
        then waits for it)."""
        self._end_converting()
        self._end_converting_next()
        self.nav = nav
        rendered, deferred = None, set()
        if self.rebuild is not None:
            rendered, deferred = self._plan_rebuild(config, files)
        if self.deck is not None and not getattr(self, "failure", None):
            made = [notebooks.DECK_NOTEBOOK]
            if self.homework is not None:
                made += self.homework.written
            if rendered is not None:
                made = [uri for uri in made if uri in rendered]
            if made:
                self.converting = notebooks.Converting(config, files, made)
            if deferred:  # rendered by the rebuild this one asks for
                self.converting_next = notebooks.Converting(
                    config, files, deferred, then=self._ask_rebuild
                )
        return nav

    def _plan_rebuild(self, config, files):
        """``mkdocs serve --dirty``: which pages this rebuild renders,
        and which notebook pages it leaves to the next one while they
        convert (``rebuild.Rebuild.plan``)."""
        pending = set()  # homework notebooks still being written
        if self.homework is not None:
            pending = set(self.homework.uris) - set(self.homework.written)
        rendered, deferred = self.rebuild.plan(
            self,
            config,
            files,
            pending,
            slow=lambda file: not notebooks.conversion_cached(config, file),
        )
        notebooks.keep_conversions(config, files, self.rebuild.skipped)
        return rendered, deferred

    def _ask_rebuild(self) -> None:
        """A deferred notebook page is converted: touch the file
        ``on_serve`` watches, so ``mkdocs serve`` rebuilds (and renders
        it from the cache)."""
        try:
            self.rebuild_trigger.parent.mkdir(parents=True, exist_ok=True)
            self.rebuild_trigger.write_text(str(time.time()))
        except (OSError, AttributeError):
            pass  # the next edit renders it

    def _end_converting(self) -> None:
        converting, self.converting = self.converting, None
        if converting is not None:
            converting.wait()

    def _end_converting_next(self) -> None:
        converting, self.converting_next = self.converting_next, None
        if converting is not None:
            converting.wait()

    def on_pre_page(self, page, *, config, files):
        """Before mkdocs-jupyter reads a notebook: it is written, and its
        conversion in the background has ended."""
        homework = self.homework
        if homework is not None and page.file.src_uri in homework.uris:
            self._wait_for_homework(config)
        converting = self.converting
        if converting is not None and page.file.src_uri in converting.uris:
            self._end_converting()
        return page

    def _wait_for_homework(self, config) -> None:
        """Wait for the homework run; its problems fail the build."""
        problems = self.homework.wait() if self.homework else []
        if problems and not getattr(self, "failure", None):
            self._fail(config, problems)

    # --- 2. MkDocs renders the checked text --------------------------------

    def on_page_read_source(self, *, page, config):
        if getattr(self, "failure", None):
            return "# The build failed\n"  # replaced in on_post_page
        return self.sources.get(page.file.src_uri)

    # --- 3. widgets ----------------------------------------------------------

    def on_pre_build(self, *, config):
        self._close_math()
        self.math = MathRenderer(cache=self.formulas)

    @event_priority(-50)  # after every plugin that puts math in the page
    def on_page_content(self, html, *, page, config, files):
        if getattr(self, "failure", None):
            return html
        html = present.exclude_notes_from_search(html)
        if page.file.src_uri in notebooks.NOT_SEARCHED:
            page.meta.setdefault("search", {})["exclude"] = True
        # Code and Output blocks stay out of the search index: a third of
        # its text, which the first visit to a slide downloads (page
        # weight budget); search finds the prose, tables and math that
        # teach, and the code is one click away on the slide it names.
        html = html.replace(
            '<div class="highlight">',
            '<div class="highlight" data-search-exclude>',
        )
        if page.file.src_uri.endswith(".ipynb"):
            html = notebooks.mark_math(html)  # typeset below, like slides
        html += self._notebook_link(page)
        stash = self.widgets.get(page.file.src_uri)
        if stash:
            html = self._fill_widgets(html, stash, page, config)
        # Widget controls and notebook prompts stay out of search too.
        notebook = page.file.src_uri.endswith(".ipynb")
        html = searchtext.exclude_chrome(html, notebook)
        # Typeset every formula now only to check it (and cache it): the
        # page keeps its TeX until on_page_context, after the search
        # plugin indexed it, so the index holds each formula once, as TeX.
        if self.math is not None:
            path, source = self._source_of(page, config)
            _, problems = self.math.render_html(html, path, source)
            self.problems += problems
        return html

    def _notebook_link(self, page) -> str:
        """A slide that runs code offers the lesson notebook to download."""
        slide = self.deck.page_at(page.file.src_uri) if self.deck else None
        if slide is None or slide.number is None:
            return ""
        if not any(i.path.startswith("snippets/") for i in slide.includes):
            return ""
        depth = page.file.src_uri.count("/")
        href = "../" * depth + notebooks.DECK_NOTEBOOK
        return (
            f'\n<p class="notebook-download" data-search-exclude><a '
            f'href="{href}" download>Run this code yourself: download the '
            "lesson as a notebook (.ipynb)</a></p>"
        )

    def _source_of(self, page, config) -> tuple[str, str]:
        """The page's path (from the root) and text, from the deck."""
        found = self.deck.page_at(page.file.src_uri) if self.deck else None
        if found is not None:
            return found.path, found.text
        homework = notebooks.HOMEWORK.get(page.file.src_uri)
        if homework and self.deck is not None:
            source = self.deck.root / homework[0]
            return homework[0], source.read_text(encoding="utf-8")
        if page.file.src_uri == notebooks.DECK_NOTEBOOK:
            return (notebooks.OUT_DIR / page.file.src_uri).as_posix(), ""
        return f"{Path(config.docs_dir).name}/{page.file.src_uri}", ""

    def _fill_widgets(self, html, stash, page, config):
        html, missing = exercises.fill_placeholders(html, stash)
        if missing and self.deck is not None:
            self.problems.append(
                Problem(
                    f"{Path(config.docs_dir).name}/{page.file.src_uri}",
                    1,
                    "an exercise lost its place while the page rendered; "
                    "expected each ```exercise fence on lines of its own",
                )
            )
        return html

    def on_env(self, env, *, config, files):
        if self.math is not None:
            self.math.close()  # every formula is cached by now
        if self.problems:
            problems, self.problems = self.problems, []
            self._fail(config, problems)
        if self.rebuild is not None:
            self.rebuild.restore(config, files, self.nav)
        return env

    # --- 4. the presentation deck -------------------------------------------

    @event_priority(-100)  # after every step that changes the content
    def on_page_context(self, context, *, page, config, nav):
        # The deck takes the content before typesetting: present.py
        # reparses it, and TeX is a tenth the size of KaTeX's HTML.
        self.rendered[page.file.src_uri] = page.content
        if self.math is not None and page.content:
            page.content, _ = self.math.render_html(page.content, "")
        if self.rebuild is not None:
            self.rebuild.record(page)
        return context

    @event_priority(50)  # before the search plugin writes its index
    def on_post_build(self, *, config):
        # Normally waited for by its page; a build without that page
        # (mkdocs-jupyter not configured) still ends only when it has.
        self._end_converting()
        self._wait_for_homework(config)
        self.homework = None
        self._judge_second_runs(config)
        if self.command != "serve":
            self._close_pool()
        if self.deck is not None and not getattr(self, "failure", None):
            math = self.math or MathRenderer(cache=self.formulas)
            present.write(
                config.site_dir,
                self.deck,
                self.rendered,
                config,
                typeset=lambda html: math.render_html(html, "")[0],
            )
            math.close()
        self._close_math()
        if self.rebuild is not None and self.nav is not None:
            failure = getattr(self, "failure", None)
            self.rebuild.finish(
                config, self.nav, failure_page(failure) if failure else None
            )
        searchtext.readable_index(config)  # formulas as text, not TeX

    def _judge_second_runs(self, config) -> None:
        """The snippets' second runs (``engine.check(defer_second=True)``)
        must agree with the first, which the pages show, and must have
        changed nothing: otherwise the build fails, and its site goes."""
        if self.result is None or self.result.second is None:
            return  # nothing ran in the background (serve, a cached build)
        problems = self.result.finish()
        problems += tampering(self.fingerprint, fingerprint(self.deck.root))
        if problems and not getattr(self, "failure", None):
            self._fail(config, problems, self.result.advice())

    # --- 5. failure ------------------------------------------------------

    def _close_math(self) -> None:
        math, self.math = self.math, None
        if math is not None:
            math.close()

    def on_build_error(self, *, error):
        if self.rebuild is not None:
            self.rebuild.forget()  # the site may be half written
        self._end_converting()
        self._close_math()
        self._cancel_homework()
        if self.command != "serve":
            self._close_pool()
        if self.mkdocs_config is not None:
            self._discard_site(self.mkdocs_config)

    def on_serve(self, server, *, config, builder):
        root = Path(config.config_file_path).resolve().parent
        for name in ("snippets", "mha_ref"):
            if (root / name).exists():
                server.watch(str(root / name))
        if self.rebuild is not None:  # deferred notebook pages, converted
            self.rebuild_trigger = cache_dir(root).parent / "serve" / "now"
            self.rebuild_trigger.parent.mkdir(parents=True, exist_ok=True)
            server.watch(str(self.rebuild_trigger.parent))
        return server

    @event_priority(-100)  # the last word on every page
    def on_post_page(self, output, *, page, config):
        if getattr(self, "failure", None):
            return failure_page(self.failure)
        return output

    def _fail(self, config, problems: list[Problem], advice: str = ""):
        if self.command == "serve":
            # `mkdocs serve` waits forever for a build that aborts: the
            # build goes on instead, every page showing the problems,
            # and the next good rebuild (livereload) shows the lesson.
            # Printed, not logged: --strict would count each logged
            # line as an error and abort the build after all.
            print(report(problems, advice), file=sys.stderr)
            self.failure = (
                (self.failure + "\n") if getattr(self, "failure", None) else ""
            ) + report(problems, advice)
            return
        for line in report(problems, advice).splitlines():
            log.error(line)
        self._discard_site(config)
        raise Abort(
            f"Aborted: {len(problems)} problem(s), listed above. No site "
            "was written."
        )

    def _discard_site(self, config) -> None:
        """Leave no site that looks like the result of a failed build."""
        if self.command == "serve":
            # `mkdocs serve` builds into a temporary folder it never
            # shows after a failed build.
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


def failure_page(text: str) -> str:
    """A whole HTML page listing a failed build's problems (serve).

    Self-contained (no theme, no script but livereload's, which MkDocs
    injects), so it shows whatever broke the theme's pages.
    """
    body = html_escape(text)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Build failed</title></head><body>"
        '<main id="build-failed"><h1>The build failed</h1>'
        "<p>Fix these problems; this page reloads by itself when the "
        "build succeeds.</p>"
        f'<pre style="white-space: pre-wrap">{body}</pre></main>'
        "</body></html>"
    )


def fingerprint(root: Path) -> dict[str, tuple]:
    """(size, mtime, inode) of every file under the guarded folders.

    Taken from ``stat`` alone: reading the files would make the deck's
    read of the slides no longer the only one, and cost time.
    """
    out = {}
    for name in GUARDED:
        folder = root / name
        if not folder.is_dir():
            continue
        for path in folder.rglob("*"):
            if "__pycache__" in path.parts:
                continue
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.is_dir() and not path.is_symlink():
                continue
            rel = path.relative_to(root).as_posix()
            out[rel] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def tampering(before: dict, after: dict) -> list[Problem]:
    """A problem for each guarded file created, changed or deleted."""
    problems = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            how = "deleted"
        elif rel not in before:
            how = "created"
        elif before[rel] != after[rel]:
            how = "changed"
        else:
            continue
        problems.append(
            Problem(
                rel,
                1,
                f"{rel} was {how} while the snippets ran; snippets must "
                "not write into the repository (write to a temporary "
                "folder instead)",
            )
        )
    return problems
