# lifebench: `make bench` runs the main job, `make test` the tests; both install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_OUT ?= results/bench
WORKERS ?=
# Data no package registry ships (ALFWorld, TextWorld cooking): this workspace's shared
# folder unless LIFEBENCH_DATA is set (see README, Data).
LIFEBENCH_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export LIFEBENCH_DATA

.PHONY: install bench test perf leaderboard clean

install: $(STAMP)

# Reinstalls only when the package definition changed (the install is editable).
# The venv leads PATH: fast-downward's build runs a bare `python` (textworld[pddl], ALFWorld).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[all,dev]'
	@touch $(STAMP)

# Every available benchmark's default splits with the reference methods, then the table
# (a benchmark whose data is missing is skipped with a line saying how to get it).
bench: install
	$(BIN)/lifebench run --benchmark "$$($(BIN)/lifebench list benchmarks --available | paste -sd, -)" \
		--method random,oracle --out $(BENCH_OUT) $(if $(WORKERS),--workers $(WORKERS),)
	$(BIN)/lifebench leaderboard $(BENCH_OUT) --output $(BENCH_OUT)/leaderboard.md

test: install
	$(BIN)/python -m pytest -q tests

perf: install
	@for script in tests/perf/perf_*.py; do $(BIN)/python $$script || exit 1; done

leaderboard: install
	$(BIN)/lifebench leaderboard $(BENCH_OUT)

clean:
	rm -rf $(VENV) results/bench
