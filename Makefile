# vid2context: `make run` starts the local server, `make test` sets up and runs every test.
#
# Everything Python is installed from uv.lock: the same versions on every machine and in CI.
# `--locked` also fails when pyproject.toml changed without `make lock`. uv itself is pinned below and installed into .tools/ with the machine's own Python;
# it never downloads a Python of its own (UV_PYTHON_DOWNLOADS=never).
PYTHON     ?= python3
UV_VERSION := 0.13.9
TOOLS      := .tools
UV         := $(TOOLS)/bin/uv
VENV       := .venv
PY         := $(VENV)/bin/python
HOST       ?= 127.0.0.1
PORT       ?= 8787

export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: run test lint bench site lock deploy venv-local venv-dev clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check 'uv==$(UV_VERSION)'

# Stamps re-run an install only when the lock or the project changes. `make run` installs the local
# runtime alone, without removing what `make test` added (--inexact); `make test` installs exactly
# the lock's local and dev sets.
# The project itself is built too, with its optional C module (hatch_build.py) when a compiler is
# there: `make test` makes sure one is, since a test checks the module was built.
BUILT_FROM := uv.lock pyproject.toml hatch_build.py src/_vid2context_captions.c

$(VENV)/.local-stamp: $(BUILT_FROM) | $(UV)
	$(UV) sync --locked --inexact --extra local --python $(PYTHON)
	touch $@

$(VENV)/.dev-stamp: $(BUILT_FROM) | $(UV) $(TOOLS)/.compiler-stamp
	$(UV) sync --locked --extra local --extra dev --python $(PYTHON)
	touch $@

# A C compiler and the headers of the Python the venv is made from.
$(TOOLS)/.compiler-stamp: | $(UV)
	@command -v cc >/dev/null && \
		test -e "$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc python3-dev)
	touch $@

venv-local: $(VENV)/.local-stamp
venv-dev: $(VENV)/.dev-stamp

# The Miniflare harness (real D1, KV and R2 for the tests) from its lock file; needs Node.js >= 20.
MINIFLARE := tests/miniflare/node_modules/.stamp
$(MINIFLARE): tests/miniflare/package-lock.json
	npm ci --prefix tests/miniflare --no-audit --no-fund
	touch $@

## run: the local server on http://$(HOST):$(PORT) (SQLite default under $$VID2CONTEXT_HOME)
run: venv-local
	$(VENV)/bin/vid2context serve --host $(HOST) --port $(PORT)

# System tools the tests run for real: ffmpeg/ffprobe (media fixtures), Debian's Chromium (the
# transcript viewer in a headless browser; Playwright drives it, no download), Tesseract and a font
# for drawtext (the on-screen layer's drawn slides) and Node.js (Miniflare).
$(TOOLS)/.system-stamp: | $(UV)
	@command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg)
	@command -v chromium >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)
	@command -v tesseract >/dev/null && test -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr fonts-dejavu-core)
	@command -v node >/dev/null && command -v npm >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm)
	touch $@

## lint: ruff check and ruff format --check (the pinned ruff of the dev extra)
lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## test: lint, then every test, offline, on every core (TEST_JOBS=1 for one process)
# pytest-xdist: a test file stays on one worker (--dist loadfile), so a file's module fixtures (a
# browser, a server) start once; each worker has its own Miniflare and temporary folders.
TEST_JOBS ?= auto
test: lint $(TOOLS)/.system-stamp $(MINIFLARE)
	$(PY) -m pytest -n $(TEST_JOBS) --dist loadfile

## bench: benchmarks; each writes its figures as JSON under bench/results/
bench: venv-dev $(MINIFLARE)
	$(PY) -m bench

## site: regenerate the docs site (site/*.md and their HTML twins, llms.txt) from its sources
site: venv-dev
	$(PY) scripts/build_ui.py
	$(PY) scripts/build_listed.py
	$(PY) scripts/build_site.py

## lock: re-resolve every dependency to its newest allowed release (uv.lock, worker/constraints.txt)
lock: | $(UV)
	$(UV) lock --upgrade
	$(MAKE) venv-dev
	$(PY) scripts/worker_deps.py

## deploy: the Worker to Cloudflare (site/deploy-cloudflare.md), its dependencies at uv.lock's versions
deploy: venv-dev
	PATH="$(abspath $(TOOLS)/bin):$$PATH" UV_CONSTRAINT="$(abspath worker/constraints.txt)" \
		$(UV) run --locked --group deploy pywrangler deploy

clean:
	rm -rf $(VENV) $(TOOLS) .pytest_cache bench/results
