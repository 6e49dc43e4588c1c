# Every set-up step lives here: `make serve` and `make test` work on a fresh
# machine with only Python 3.11. Nothing else needs installing by hand.

PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Debian's Chromium, driven by Playwright; never a browser download.
CHROMIUM := /usr/bin/chromium
# Material prints a banner about MkDocs 2 on every build; we stay on
# MkDocs 1.6, so keep build logs to what matters.
export NO_MKDOCS_2_WARNING := 1

.PHONY: help venv browser serve build test lint format pytest \
        check-outputs update-outputs bench clean

help:
	@echo "make serve           build and serve the site on http://127.0.0.1:8000"
	@echo "make test            every check: lint, strict build, tests"
	@echo "make build           strict site build into site/"
	@echo "make check-outputs   run every snippet, compare with Output blocks"
	@echo "make update-outputs  accept new snippet outputs (rewrites drifted blocks)"
	@echo "make bench           time the snippet engine (cold, warm, baseline)"
	@echo "make format          apply ruff's formatter and autofixes"

venv: $(STAMP)

# Re-install whenever the pins change. torch==2.13.0 comes from the local
# CPU wheel that pip finds through its configured find-links.
$(STAMP): requirements.txt pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $@

browser:
	@test -x $(CHROMIUM) || { \
	  echo "Installing Debian's chromium for the browser tests..."; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@test -x $(CHROMIUM) || { echo "error: $(CHROMIUM) missing after install" >&2; exit 1; }

serve: $(STAMP)
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

build: $(STAMP)
	$(BIN)/mkdocs build --strict

# Biome (pinned in package.json/package-lock.json) lints the site's own
# JavaScript and CSS; vendored libraries are left alone (biome.json).
BIOME := node_modules/.bin/biome
$(BIOME): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

lint: $(STAMP) $(BIOME)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIOME) lint --error-on-warnings

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

check-outputs: $(STAMP)
	$(BIN)/python -m lessonbuild check

update-outputs: $(STAMP)
	$(BIN)/python -m lessonbuild update

bench: $(STAMP)
	$(BIN)/python -m lessonbuild bench

# The tests reuse the strict build in site/ instead of building again.
pytest: build browser
	LESSON_SITE_DIR=site $(BIN)/python -m pytest -q

test: lint pytest

clean:
	rm -rf site .cache .pytest_cache .ruff_cache .hypothesis
