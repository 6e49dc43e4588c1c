"""One lesson build: deck -> checks -> pages -> site, and what it owns.

Each ``plugin.LessonPlugin`` hook calls one method here, in MkDocs'
order. Every problem is reported at once, through ``fail``: ``mkdocs
build`` logs the report and aborts, leaving no site; ``mkdocs serve``
shows it on every page and goes on. Under serve this object lives
across rebuilds, keeping the fork servers, the typeset formulas and
each page's rendered exercises.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import sys
from html import unescape
from pathlib import Path

from jinja2 import FileSystemBytecodeCache
from mkdocs.exceptions import Abort

from . import (
    engine,
    exercises,
    liveserve,
    notebooks,
    pagehtml,
    present,
    searchtext,
)
from .atomic import BuildLock, SiteSwap
from .deck import AFTER_ANSWER, Deck, read_deck
from .engine import markup, prose
from .engine.guard import fingerprint, tampering
from .live import Verified
from .macros import TemplateProblem, Templates
from .mathrender import MathRenderer
from .problems import Problem, report
from .rebuild import Rebuild
from .settings import Settings, cache_dir, state_dir

log = logging.getLogger("mkdocs.plugins.lesson")
_ID = re.compile(r'\sid="([^"]+)"')  # an element id in an exercise's HTML
#: A code block as pymdownx.highlight writes it (a div: title span, pre).
_CODE_BLOCK = re.compile(
    r"<div\b[^>]*\bhighlight\b[^>]*>(?:(?!</div>).)*?<pre\b[^>]*>(.*?)</pre>",
    re.S,
)
_TAG = re.compile(r"<[^>]+>")
#: mkdocs-jupyter's hidden copy of a code cell, which its copy button copies.
_COPY_TEXT = re.compile(r'<div(?=[^>]*\bclass="clipboard-copy-txt")')
_PACKAGE_IMPORT = re.compile(r"^\s*(?:from|import)\s+mha_ref\b", re.M)
_FOLD_TAG = re.compile(r"<(/?)(details|section)\b([^>]*)>")


def _folded_at(html: str, pos: int) -> bool:
    """Whether ``pos`` is in a fold or an after-answer section, which a
    reader sees only later (slide 47's first import sat in an answer's
    fold, its note with it, above the block a student copied first)."""
    stack = []
    for tag in _FOLD_TAG.finditer(html, 0, pos):
        if tag[1]:
            stack = stack[:-1]
        else:
            stack.append(tag[2] == "details" or AFTER_ANSWER in tag[3])
    return any(stack)


def _address_free(addr) -> None:
    """Serve's address, tried before its first build (a port in use
    failed 22 s in, with a traceback and no word of PORT=)."""
    family = socket.AF_INET6 if ":" in addr.host else socket.AF_INET
    try:
        socket.create_server((addr.host, addr.port), family=family).close()
    except OSError as exc:
        raise Abort(
            f"cannot serve on {addr.host}:{addr.port}: {exc.strerror} "
            "(another `make serve`?); stop it, or serve on another port: "
            f"make serve PORT={addr.port + 1}"
        ) from None


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


class Build:
    def __init__(self, command: str = "build", dirty: bool = False):
        # mkdocs-jupyter logs every cache hit and conversion at INFO.
        for name in ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.serving = command == "serve"
        # `mkdocs serve --dirty`: which pages a rebuild renders.
        self.rebuild = Rebuild() if self.serving and dirty else None
        self.settings = Settings()
        self.config = None
        self.pool = None  # fork servers (serve: kept across rebuilds)
        self.homework: notebooks.Homework | None = None
        self.math: MathRenderer | None = None
        self.lock: BuildLock | None = None  # one build of a site at a time
        self.address_tried = False  # serve: its address, before building
        self.live = None  # serve: live code's endpoint (liveserve.py)
        self.trigger: Path | None = None  # touched to ask for a rebuild
        # Kept across serve's rebuilds (a skipped page keeps its last).
        self.formulas: dict[tuple[str, bool], str] = {}  # (TeX, display)
        self.exercise_pages: dict[tuple, exercises.PageResult] = {}
        self.rendered: dict[str, str] = {}
        self._new_build()

    def _new_build(self) -> None:
        """What one build (one rebuild, under serve) starts without."""
        self.deck: Deck | None = None
        self.result: engine.Result | None = None
        self.sources: dict[str, str] = {}  # src_uri -> text to render
        self.widgets: dict[str, dict[str, str]] = {}  # src_uri -> html
        self.problems: list[Problem] = []  # found while pages render
        self.fingerprint: dict[str, tuple] = {}
        self.failure: str | None = None  # serve: the report pages show
        self.swap: SiteSwap | None = None  # the site, moved in when done
        self.templates: Templates | None = None  # the pages' macros
        self.refs: exercises.RefIndex | None = None  # {{ ref(...) }}

    def _slide(self, page):
        return self.deck.page_at(page.file.src_uri) if self.deck else None

    def prestart(self, root: Path) -> None:
        """The seed-0 fork server imports torch while MkDocs loads the
        other plugins (only if a snippet has no cached run)."""
        if self.pool is None:
            engine.prestart(root, cache_dir(root), self._pool(root))

    def _pool(self, root: Path):
        """The engine's fork servers: kept for a whole ``mkdocs serve``;
        for a build, until ``finish`` collected what ran in the background."""
        if self.pool is None or self.pool.root != root:
            from .engine.runner import Pool

            self._stop("pool")
            self.pool = Pool(root)
        return self.pool

    def _stop(self, name: str, how: str = "close") -> None:
        running = getattr(self, name)
        setattr(self, name, None)
        if running is not None:
            getattr(running, how)()

    def start(self, config, settings: Settings):
        self._new_build()
        self.config, self.settings = config, settings
        root = _root(config)
        if self.serving and not self.address_tried:
            self.address_tried = True
            _address_free(config.dev_addr)
        if not self.serving:  # serve builds into its own folder
            lock = state_dir(root) / "build.lock"
            self.lock = self.lock or BuildLock(lock, log.info)
            self.swap = SiteSwap(config.site_dir)
            config.site_dir = str(self.swap.building)
        self.fingerprint = fingerprint(root)
        self.templates = Templates(config)
        deck = self.deck = read_deck(root, config.docs_dir, settings.parts)
        # Serve: an earlier build's homework, if unfinished.
        self._stop("homework", "cancel")
        self.result = engine.check(
            deck,
            timeout=settings.timeout(),
            jobs=settings.job_count(),
            cache_dir=cache_dir(root),
            output_limits=settings.output_limits(),
            pool=self._pool(root),
            warm=self.serving,
            # A build renders while the second runs go on (finish judges).
            defer_second=not self.serving,
        )
        exercise_problems = self._render_exercises(config, deck)
        problems = list(deck.problems)
        problems += prose.hand_typed(
            deck.pages, self.result.values, self.result.tables
        )
        for page in deck.pages:  # raw HTML, titles (engine/markup.py)
            problems += markup.page_problems(page)
        problems += markup.symlink_problems(Path(config.docs_dir), root)
        if problems or self.result.problems or exercise_problems:
            self.result.finish()  # every problem at once: theirs too
        problems += self.result.problems
        # Only code that ran can have written (else: an edit, not a run).
        if self.result.ran:
            problems += tampering(self.fingerprint, fingerprint(root))
        problems += exercise_problems
        # The engine's line first: the report's count is the last word.
        log.info(self.result.summary())
        if problems:
            self.fail(problems)
        elif deck.slides:
            self.homework = notebooks.Homework(
                deck.root, self.result.key, self.pool
            )
        config.nav = self._nav(config.nav, deck)
        # "N / 55" in the slide header (overrides/main.html).
        config.extra["slide_count"] = len(deck.slides)
        return config

    def _render_exercises(self, config, deck: Deck) -> list[Problem]:
        fragments = None  # made on the first page not rendered before
        tables, values = self.result.tables, self.result.values
        # Slide numbers and option letters, computed from their ids.
        self.refs = exercises.RefIndex.from_deck(deck)
        problems = self.refs.check(deck)
        # What a page's render depends on: serve keeps the others.
        context = repr(
            (
                sorted(tables.items()),
                sorted(values.items()),
                config.markdown_extensions,
                config.mdx_configs,
                self.settings.storage_prefix,
                self.refs.fingerprint(),
            )
        )
        kept, self.exercise_pages = self.exercise_pages, {}
        found = []  # (path, exercise) over the deck, for check_spread
        for page in deck.pages:
            src_uri = deck.docs_rel(page)
            key = (src_uri, page.path, page.text, context)
            out = kept.get(key)
            if out is None:
                if fragments is None:
                    fragments = exercises.Fragments(
                        config.markdown_extensions, config.mdx_configs
                    )
                out = exercises.render_page(
                    page,
                    url=src_uri[: -len(".md")] + ".html",
                    fragments=fragments,
                    tables=tables,
                    key_prefix=self.settings.storage_prefix,
                    values=values,
                    refs=self.refs,
                )
            self.exercise_pages[key] = out
            problems += out.problems
            found += [(page.path, ex) for ex in out.exercises]
            self.sources[src_uri] = out.text
            self.widgets[src_uri] = out.html
        return problems + exercises.check_spread(found)

    def _nav(self, nav, deck: Deck):
        """The configured nav, the lesson's parts, then the notebooks this
        build makes (no answers: no task's "Next"; no homework that was
        not made: a nav entry without its page fails a strict build)."""
        nav = list(nav or [])
        if not nav and (deck.docs / "index.md").is_file():
            nav = [{"Home": "index.md"}]
        for part in deck.parts:
            nav.append({part.name: [deck.docs_rel(s) for s in part.slides]})
        if deck.slides:
            # Not its heading (the lesson's title): "Next" after the last
            # slide must not read like slide 1.
            made = [{"The lesson as a notebook": notebooks.DECK_NOTEBOOK}]
            done = self.homework.uris if self.homework else []
            made += [uri for uri in done if uri not in notebooks.SOLUTIONS]
            nav.append({"Notebooks": made})
        return nav

    def add_files(self, files, config):
        """The figures snippets published (and their phone versions),
        ``mha_ref.zip`` and the notebooks (before mkdocs-jupyter's
        ``on_files``, which converts them)."""
        from mkdocs.structure.files import File

        figures = self.result.figures if self.result else {}
        for figure_id, data in figures.items():
            for key, suffix in (("svg", ".svg"), ("narrow", ".narrow.svg")):
                if key in data:
                    path, content = f"figures/{figure_id}{suffix}", data[key]
                    files.append(File.generated(config, path, content=content))
        if self.deck is None or not self.deck.slides:
            return files
        package = notebooks.package_zip(self.deck.root / "mha_ref")
        files.append(
            File.generated(config, notebooks.PACKAGE_ZIP, content=package)
        )
        folder = notebooks.write_deck_notebook(self.deck, self.result.outputs)
        site, urls = config.site_dir, config.use_directory_urls
        uris = [notebooks.DECK_NOTEBOOK]
        uris += self.homework.uris if self.homework else []
        for uri in uris:
            files.append(File(uri, str(folder), site, urls))
        return files

    def answers_out_of_nav(self, files):
        """The answers are built but in no nav: said, or MkDocs lists them
        as pages the nav forgot (on the files mkdocs-jupyter made)."""
        from mkdocs.structure.files import InclusionLevel

        for uri in notebooks.SOLUTIONS:
            if uri in files.src_uris:
                files.src_uris[uri].inclusion = InclusionLevel.NOT_IN_NAV
        return files

    def plan(self, config, files) -> None:
        """Under ``serve --dirty``: which pages this rebuild renders."""
        if self.rebuild is not None:
            self.rebuild.plan(self, config, files)

    def pre_page(self, page) -> None:
        """Before mkdocs-jupyter reads a homework notebook: it is written."""
        if self.homework and page.file.src_uri in self.homework.uris:
            self._wait_for_homework()
            if self.rebuild is not None:
                self.rebuild.rekey(self, page.file)

    def _wait_for_homework(self) -> None:
        """Wait for the homework run; its problems fail the build."""
        problems = self.homework.wait() if self.homework else []
        if problems and not self.failure:
            self.fail(problems)

    def source(self, page) -> str | None:
        """The text the engine checked: what is published was checked."""
        if self.failure:
            return "# The build failed\n"  # replaced in post_page
        return self.sources.get(page.file.src_uri)

    def markdown(self, markdown: str, page, config) -> str:
        """The page's macro calls rendered (``macros.Templates``)."""
        if self.failure or not page.file.src_uri.endswith(".md"):
            return markdown
        slide = self._slide(page)
        path, _ = self._source_of(page, config)
        lines = slide.lines if slide else markdown.split("\n")
        try:
            return self.templates.render(markdown, page, path, lines)
        except TemplateProblem as exc:
            self.fail(exc.problems)
            return markdown

    def pre_build(self) -> None:
        self._stop("math")
        self.math = MathRenderer(cache=self.formulas)

    def page_content(self, html: str, page, config) -> str:
        if self.failure:
            return html
        uri = page.file.src_uri
        notebook = uri.endswith(".ipynb")
        if uri in notebooks.NOT_SEARCHED:
            page.meta.setdefault("search", {})["exclude"] = True
        if notebook:
            html = notebooks.mark_math(html)  # typeset below, like slides
        html = self._notebook_links(page, html)
        stash = self.widgets.get(uri)
        if stash:
            html, missing = exercises.fill_placeholders(html, stash)
            # MkDocs took the anchors before the widgets were in: or each
            # link to an exercise is reported as broken.
            for section in stash.values():
                page.present_anchor_ids.update(_ID.findall(section))
            if missing:
                where = f"{Path(config.docs_dir).name}/{uri}"
                message = (
                    "an exercise lost its place while the page rendered; "
                    "expected each ```exercise fence on lines of its own"
                )
                self.problems.append(Problem(where, 1, message))
        html = pagehtml.tidy(html)
        # Notes, answers' folds, code, widget controls: not for search.
        html = searchtext.exclude_from_search(html, notebook)
        if notebook:  # htmlmin keeps a `pre`-marked copy button's text
            html = _COPY_TEXT.sub("<div pre", html)
        # Typeset to check (and cache): TeX stays until search indexed it.
        path, text = self._source_of(page, config)
        self.problems += self.math.render_html(html, path, text)[1]
        return html

    def _notebook_links(self, page, html: str) -> str:
        """A slide that runs code offers the lesson notebook, and
        ``mha_ref.zip`` above the first block that imports it, outside
        folds where one is (copied alone, it raised ModuleNotFoundError)."""
        slide = self._slide(page)
        if slide is None or slide.number is None:
            return html
        if not any(i.path.startswith("snippets/") for i in slide.includes):
            return html
        up = "../" * page.file.src_uri.count("/")
        importing = [
            block
            for block in _CODE_BLOCK.finditer(html)
            if _PACKAGE_IMPORT.search(unescape(_TAG.sub("", block[1])))
        ]
        if importing:
            seen = (b for b in importing if not _folded_at(html, b.start()))
            at = next(seen, importing[0]).start()
            package = (
                '<p class="notebook-download" data-search-exclude>'
                "Copied on its own, the block below and every one "
                f'here that imports <code>mha_ref</code> need <a href="'
                f'{up}{notebooks.PACKAGE_ZIP}" download>'
                f"{notebooks.PACKAGE_ZIP}</a> unzipped in the folder "
                "you save them in.</p>"
            )
            html = html[:at] + package + html[at:]
        return html + (
            f'\n<p class="notebook-download" data-search-exclude><a '
            f'href="{up}{notebooks.DECK_NOTEBOOK}" download>Run this code '
            f"yourself: download the lesson as a notebook (.ipynb)</a>.</p>"
        )

    def _source_of(self, page, config) -> tuple[str, str]:
        """The page's path (from the root) and text, for a TeX error."""
        uri = page.file.src_uri
        if slide := self._slide(page):
            return slide.path, slide.text
        homework = notebooks.HOMEWORK.get(uri)
        if homework and self.deck is not None:
            source = self.deck.root / homework
            return homework, source.read_text(encoding="utf-8")
        if uri == notebooks.DECK_NOTEBOOK:
            return (notebooks.OUT_DIR / uri).as_posix(), ""
        return f"{Path(config.docs_dir).name}/{uri}", ""

    def env(self, env, files) -> None:
        """Every page is read: fail on what rendering found, restore the
        pages a rebuild skipped; the theme's compiled templates are kept
        (serve does not compile them again)."""
        folder = state_dir(_root(self.config)) / "templates"
        folder.mkdir(parents=True, exist_ok=True)
        env.bytecode_cache = FileSystemBytecodeCache(str(folder))
        self.math.close()  # every formula is cached by now
        if self.problems:
            problems, self.problems = self.problems, []
            self.fail(problems)
        if self.rebuild is not None:
            self.rebuild.restore(files)

    def page_context(self, page) -> None:
        # present.py takes TeX: a tenth the size of KaTeX's HTML.
        self.rendered[page.file.src_uri] = page.content
        if page.content:
            page.content, _ = self.math.render_html(page.content, "")
        if self.rebuild is not None:
            self.rebuild.record(page)

    def finish(self, config) -> None:
        # (Its page waited, if mkdocs-jupyter is configured.)
        self._wait_for_homework()
        self.homework = None
        self._judge_second_runs()
        if not self.serving:
            self._stop("pool")
        if self.deck is not None and not self.failure:
            present.write(
                config.site_dir,
                self.deck,
                self.rendered,
                config,
                typeset=lambda html: self.math.render_html(html, "")[0],
            )
        self._stop("math")
        if self.rebuild is not None:
            failed = self.failure_page() if self.failure else None
            if self.rebuild.finish(config, failed) and self.trigger:
                # A notebook was deferred: serve rebuilds for it.
                self.trigger.parent.mkdir(parents=True, exist_ok=True)
                self.trigger.write_text("rebuild")
        searchtext.readable_index(config)  # formulas as text, not TeX

    def _judge_second_runs(self) -> None:
        """The second runs must agree with the first (the pages show it)
        and change nothing; else the build fails, and its site goes."""
        if self.result is None or self.result.second is None:
            return  # nothing ran in the background (serve, a cached build)
        problems = self.result.finish()
        problems += tampering(self.fingerprint, fingerprint(self.deck.root))
        if problems and not self.failure:
            self.fail(problems)

    def publish_site(self, config) -> None:
        """After every plugin wrote: the site moved into place in one step."""
        searchtext.compact_index(Path(config.site_dir))
        if self.swap is not None:
            self.swap.publish()
            config.site_dir = str(self.swap.final)
            self.swap = None

    def serve(self, server, config) -> None:
        """Watch the snippets, mha_ref and a deferred page's trigger, and
        serve live code."""
        root = _root(config)
        for name in ("snippets", "mha_ref"):
            if (root / name).exists():
                server.watch(str(root / name))
        if self.rebuild is not None:
            self.trigger = state_dir(root) / "serve" / "now"
            self.trigger.parent.mkdir(parents=True, exist_ok=True)
            server.watch(str(self.trigger.parent))
        self.live = liveserve.install(
            server, config, lambda: Verified(self.deck, self.result)
        )

    def shutdown(self) -> None:
        if self.live is not None:
            self.live.live.close()
        self._stop("homework", "cancel")
        self._stop("pool")

    def fail(self, problems: list[Problem]) -> None:
        """The one way a build fails (see the module's docstring)."""
        text = report(problems)
        if self.serving:
            # Printed: --strict would abort on a logged error.
            print(
                f"{text}\nThe preview shows these problems on every page "
                "until a build succeeds.",
                file=sys.stderr,
            )
            self.failure = f"{self.failure}\n{text}" if self.failure else text
            return
        for line in text.splitlines():
            log.error(line)
        self.discard_site(self.config)
        raise Abort("Aborted for the problems above: no site was written.")

    def failure_page(self) -> str:
        """A whole HTML page listing a failed build's problems (serve)."""
        failure = present.TEMPLATES.get_template("failure.html")
        return failure.render(report=self.failure)

    def error(self) -> None:
        """``on_build_error``: stop what runs, leave no half site."""
        if self.rebuild is not None:
            self.rebuild.forget()  # the site may be half written
        self._stop("math")
        self._stop("homework", "cancel")
        if not self.serving:
            self._stop("pool")
        self.discard_site(self.config)

    def discard_site(self, config) -> None:
        """Leave no site from a failed build (serve's is never shown)."""
        if self.serving or config is None:
            return
        if self.swap is not None:
            self.swap.discard()
            config.site_dir = str(self.swap.final)
            self.swap = None
        site = Path(config.site_dir).resolve()
        root = _root(config)
        docs = Path(config.docs_dir).resolve()
        # Never delete the project, the docs or anything above them.
        if site in (root, docs) or root.is_relative_to(site):
            log.warning(f"not removing site_dir {site}: it holds the project")
            return
        if site.is_dir() and not docs.is_relative_to(site):
            shutil.rmtree(site, ignore_errors=True)
