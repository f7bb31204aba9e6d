# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test bench bench-redact clean venv

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

$(DEVSTAMP): requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $(STAMP) $@

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python ctxlake.py demo

test: $(DEVSTAMP)
	$(BIN)/python -m pytest -q tests

bench: $(DEVSTAMP)
	$(BIN)/python bench/hook_latency.py
	$(BIN)/python bench/sync_throughput.py
	$(BIN)/python bench/ctxctl_savings.py
	$(BIN)/python bench/mcp.py
	$(BIN)/python bench/lease_contention.py
	$(BIN)/python bench/fleet_scale.py

bench-redact: $(DEVSTAMP)
	$(BIN)/python bench/redact_corpus.py

clean:
	rm -rf $(VENV) .pytest_cache
