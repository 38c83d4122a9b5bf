# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes. `ledger` is the database stack and the command
# line; `pip install registre` alone is the auditor's offline verifier.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[ledger,bench]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[ledger,test]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/registre demo --dir .registre/demo

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy --strict registre

# Every test has a time limit (tests/timeouts.py: 300 s, ten times that under
# HYPOTHESIS_PROFILE=deep; REGISTRE_TEST_TIMEOUT=SECONDS replaces it): a hang fails naming
# its test, with the stack of every thread. REGISTRE_TEST_INDEX=1: the auditor's install is
# built from the package index (tests/test_slim_install.py), and an unreachable index fails it.
unit: $(VENV)/.installed-test
	REGISTRE_TEST_INDEX=1 $(BIN)/pytest -q -n 2 --benchmark-disable --durations=15

test: lint typecheck unit

# Benchmarks are measured, never asserted. Sizes may be overridden: make bench BENCH_SIZES=1000,100000
BENCH_SIZES ?= 1000,100000,1000000
# ... and a small `registre bench` (report.md, results.json, plots in .benchmarks/registre-bench):
# make bench BENCH_RUN_SIZES=1e3,1e4 BENCH_BUDGETS=8k,32k,128k
# It ends by printing the README's bench tables from that run (machine and date included):
# python -m registre.bench.readme_table RESULTS.json [--old OLD_RESULTS.json]
BENCH_RUN_SIZES ?= 1e3
BENCH_BUDGETS ?= 8k,32k,128k
bench: $(VENV)/.installed-test
	mkdir -p .benchmarks
	REGISTRE_BENCH_SIZES=$(BENCH_SIZES) $(BIN)/pytest tests/benchmarks -q \
		--benchmark-only --benchmark-columns=min,median,mean,ops,rounds \
		--benchmark-group-by=group --benchmark-sort=name \
		--benchmark-json=.benchmarks/latest.json
	$(BIN)/python -m registre.bench.sidebyside .benchmarks/latest.json --markdown
	$(BIN)/registre bench --sizes $(BENCH_RUN_SIZES) --budgets $(BENCH_BUDGETS) \
		--out .benchmarks/registre-bench
	$(BIN)/python -m registre.bench.readme_table .benchmarks/registre-bench/results.json

clean:
	rm -rf $(VENV) .registre .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks
