# memcore — the two set-up commands of the README are `make run` and `make test`.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
MODEL   ?= qwen2.5-coder-1.5b-instruct-q4_k_m
RUN_MODEL ?= qwen2.5-coder-0.5b-instruct-q4_k_m
CI_MODEL ?= qwen2.5-coder-0.5b-instruct-q4_k_m
ARGS    ?=
# llama-cpp-python is compiled from source (PyPI has no CPU wheel). Pinned to the version verified on this kind of
# machine, and never native: a native build (-march=native) enables the AMX kernels a CPU reports, and on virtualized
# Intel CPUs with AMX its worker threads die with a general protection fault on the first forward pass.
# scripts/llama_cmake_args.py names each instruction set from /proc/cpuinfo instead: AVX-512 (+ VNNI) where the CPU
# has it, AVX2/FMA/F16C elsewhere, AMX always off; set LLAMA_CMAKE_ARGS to override. scripts/build_llama_wheel.py
# builds the wheel from the pinned sdist (sha256-checked) without llama.cpp's `common` library, which the package
# never loads (no wheel cache: a cached wheel would be reused whatever CMAKE_ARGS say). The wheel compiles in the
# background while torch and the other packages download and install; one pip pass then installs it with the rest.
LLAMA_CPP_VERSION ?= 0.3.36
LLAMA_CMAKE_ARGS  ?= $(shell $(PY) scripts/llama_cmake_args.py)
LLAMA_BUILD_LINE   = $(if $(filter file,$(origin LLAMA_CMAKE_ARGS)),$(shell $(PY) scripts/llama_cmake_args.py --describe),llama.cpp build: LLAMA_CMAKE_ARGS as given)

.PHONY: install model run test test-all test-fast lint format clean-cache

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@echo "$(LLAMA_BUILD_LINE)"
	@rm -rf $(VENV)/llama-wheel; \
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python scripts/build_llama_wheel.py --version $(LLAMA_CPP_VERSION) \
	  --out $(VENV)/llama-wheel >$(VENV)/llama-build.log 2>&1 & build=$$!; \
	echo "pip install torch==2.13.0 (CPU: an unpinned torch would pull a multi-GB CUDA build), .[mem0,dev], the $(CI_MODEL) model"; \
	$(BIN)/pip install --quiet torch==2.13.0 && $(BIN)/pip install --quiet -e '.[mem0,dev]' && \
	  $(BIN)/python scripts/get_local_model.py --model $(CI_MODEL) >/dev/null; rc=$$?; \
	wait $$build || { tail -n 30 $(VENV)/llama-build.log; echo "error: compiling llama-cpp-python failed (log: $(VENV)/llama-build.log)"; exit 1; }; \
	[ $$rc -eq 0 ] || exit $$rc
	$(BIN)/pip install --quiet "$$(ls $(VENV)/llama-wheel/llama_cpp_python-*.whl)[server]" -e '.[local,mem0,dev]'
	rm -rf $(VENV)/llama-wheel
	# A one-token completion on the freshly built server (the 0.5B model, assembled above): a build that crashes
	# says so now, in one line, instead of as connection errors ten minutes into a run.
	$(BIN)/python -m memcore.llm.selfcheck --model $(CI_MODEL)
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
	$(BIN)/python -m memcore.llm.selfcheck --model $(CI_MODEL)
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
