# vid2context: `make run` starts the local server, `make test` sets up and runs every test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8787

.PHONY: run test bench site venv-local venv-dev clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Stamps re-run the install only when pyproject.toml changes.
$(VENV)/.local-stamp: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[local]'
	touch $@

$(VENV)/.dev-stamp: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[local,dev]'
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

# System tools the tests run for real: ffmpeg/ffprobe (media fixtures) and Node.js (Miniflare).
$(VENV)/.system-stamp: | $(PY)
	@command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ffmpeg)
	@command -v node >/dev/null && command -v npm >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm)
	touch $@

## test: every test, offline
test: venv-dev $(VENV)/.system-stamp $(MINIFLARE)
	$(PY) -m pytest

## bench: benchmarks; each writes its figures as JSON under bench/results/
bench: venv-dev $(MINIFLARE)
	$(PY) -m bench

## site: regenerate the docs site (site/*.md and their HTML twins, llms.txt) from its sources
site: venv-dev
	$(PY) scripts/build_site.py

clean:
	rm -rf $(VENV) .pytest_cache bench/results
