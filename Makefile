# memcore — the two set-up commands of the README are `make run` and `make test`.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
MODEL   ?= qwen2.5-coder-1.5b-instruct-q4_k_m
RUN_MODEL ?= qwen2.5-coder-0.5b-instruct-q4_k_m
CI_MODEL ?= qwen2.5-coder-0.5b-instruct-q4_k_m
ARGS    ?=

.PHONY: install model run test test-all test-fast lint format clean-cache

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch first: an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[local,mem0,dev]'
	touch $@

install: $(VENV)/.installed

model: install
	$(BIN)/python scripts/get_local_model.py --model $(MODEL)

## The main job: MemCoRe (LLM gate) on locomo-quick with the local 0.5B llama.cpp backbone; prints the table and
## the seconds spent installing, assembling the model and running (a demonstration, not a benchmark).
run:
	@t0=$$(date +%s); $(MAKE) --no-print-directory install || exit $$?; t1=$$(date +%s); \
	$(BIN)/python scripts/get_local_model.py --model $(RUN_MODEL) || exit $$?; t2=$$(date +%s); \
	$(BIN)/memcore-run experiment=quickstart $(ARGS); rc=$$?; t3=$$(date +%s); \
	echo "make run: install $$((t1 - t0)) s, model assembly $$((t2 - t1)) s, run $$((t3 - t2)) s (exit $$rc)"; exit $$rc

## Unit tests + the real end-to-end runs (llama.cpp on the small model, MiniLM, a LoCoMo slice). CI runs this.
test: install
	$(BIN)/python scripts/get_local_model.py --model $(CI_MODEL)
	@t0=$$(date +%s); $(BIN)/pytest -q --runslow -m "not slow or e2e" $(ARGS); rc=$$?; \
	echo "make test: tests $$(( $$(date +%s) - t0 )) s (exit $$rc)"; exit $$rc

## Everything, including the slow real-model tests of each baseline (tens of minutes on 2 cores).
test-all: install
	$(BIN)/python scripts/get_local_model.py --model $(CI_MODEL)
	$(BIN)/pytest -q --runslow $(ARGS)

## Unit tests only: no LLM server, no process launches (tests marked e2e or slow are skipped); about a minute of CPU.
test-fast: install
	$(BIN)/pytest -q $(ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean-cache:
	rm -rf results/cache results/snapshots
