#!/usr/bin/env bash
# Three baselines against their own variants with the local 1.5B model on locomo-mini (conv-26 sessions 1-3: 58
# turns, 25 QA), A-MEM protocol, one run at a time (the llama.cpp server is exclusive):
#   memgpt    MemGPT at its own 8,192-token main context vs memgpt-full-window. Both on a 32,768-token server with
#             a 30,000-token budget (the Qwen3 presets' budget): the local preset's 6,000 would cap both windows
#             below 8,192 and make the two the same. The slice's 58 turns fill about 4,400 tokens, so 8,192 never
#             evicts there; a third run with a 4,096-token window (experiment i38_local_w4096) pages.
#   lightmem  LightMem before (the tree at LIGHTMEM_BEFORE, default db0e8c1: paraphrased prompts, th 512, rate 0.6,
#             extraction max_tokens 2,048) vs after (upstream prompts, LightMem(768, 0.8)); both provenance=source.
#   fluxmem   FluxMem with upstream's 512-character chunks vs fluxmem-facts (atomic facts, one LLM call per turn).
# Then the runs archived with their items and verified, the response cache exported (the runs replay without a
# server, and a rerun resumes from it), and the paired tables experiments/measure/baselines_local_pairs.py lists.
#
#   MEMCORE_RESULTS=<root> experiments/measure/baselines_local.sh
#
# PAIRS (default "memgpt lightmem fluxmem") picks the pairs; PHASES (default "import runs archive tables") the
# parts. "import" merges the committed replies (results/measured/cache/local_1p5b_locomo_mini*.jsonl.gz) into the
# roots' caches first, so the runs replay what was measured and resume where it stopped.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${MEMCORE_BIN:-$PWD/.venv/bin}
PAIRS=${PAIRS:-"memgpt lightmem fluxmem"}
PHASES=${PHASES:-"import runs archive tables"}
ROOT=${MEMCORE_RESULTS:?set MEMCORE_RESULTS to a scratch results root}
ROOT_BEFORE="$ROOT/before"
BEFORE_REV=${LIGHTMEM_BEFORE:-db0e8c1}
DATA=${MEMCORE_DATA:-$(cd .. && pwd)/shared/data}
OUT=results/measured/baselines_local
TAG=i38_local
C=(dataset=locomo-mini backbone=local progress=false print_table=false)
BIG=(backbone.n_ctx=32768 backbone.prompt_token_cap=30000)
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() {
  local t0=$SECONDS
  log "start: $*"
  if "$@"; then log "done in $((SECONDS - t0)) s"; else log "FAILED after $((SECONDS - t0)) s: $*"; fi
}
has() { [[ " $1 " == *" $2 "* ]]; }

CACHE_FILE=results/measured/cache/local_1p5b_locomo_mini.jsonl.gz
CACHE_BEFORE=results/measured/cache/local_1p5b_locomo_mini_lightmem_before.jsonl.gz

if has "$PHASES" import; then
  mkdir -p "$ROOT/cache" "$ROOT_BEFORE/cache"
  [[ -f $CACHE_FILE ]] && "$BIN/memcore-cache" --cache "$ROOT/cache/llm.sqlite" import "$CACHE_FILE"
  [[ -f $CACHE_BEFORE ]] && "$BIN/memcore-cache" --cache "$ROOT_BEFORE/cache/llm.sqlite" import "$CACHE_BEFORE"
fi

if has "$PHASES" runs; then
  if has "$PAIRS" memgpt; then
    run "$BIN/memcore-run" "${C[@]}" "${BIG[@]}" method=memgpt experiment_name=$TAG paths.root="$ROOT"
    run "$BIN/memcore-run" "${C[@]}" "${BIG[@]}" method=memgpt-full-window experiment_name=$TAG paths.root="$ROOT"
    run "$BIN/memcore-run" "${C[@]}" "${BIG[@]}" method=memgpt method.context_window_tokens=4096 \
      experiment_name=${TAG}_w4096 paths.root="$ROOT"
  fi
  if has "$PAIRS" lightmem; then
    run "$BIN/memcore-run" "${C[@]}" method=lightmem experiment_name=$TAG paths.root="$ROOT"
    before_tree="$ROOT/lightmem_before_tree"
    mkdir -p "$before_tree" && git archive "$BEFORE_REV" baselines memcore configs | tar -x -C "$before_tree"
    (cd "$before_tree" && run env MEMCORE_DATA="$DATA" PYTHONPATH="$before_tree" "$BIN/python" -c \
      "import sys; from memcore.commands.run import run_main; sys.exit(run_main())" "${C[@]}" method=lightmem \
      method.provenance=source experiment_name=i38_lightmem_before paths.root="$ROOT_BEFORE")
  fi
  if has "$PAIRS" fluxmem; then
    run "$BIN/memcore-run" "${C[@]}" method=fluxmem experiment_name=$TAG paths.root="$ROOT"
    run "$BIN/memcore-run" "${C[@]}" method=fluxmem-facts experiment_name=$TAG paths.root="$ROOT"
  fi
fi

if has "$PHASES" archive; then
  for exp in "$TAG" "${TAG}_w4096"; do
    [[ -d "$ROOT/runs/$exp" ]] && "$BIN/memcore-archive" --slim --root "$ROOT" --out "$OUT/runs" "$ROOT/runs/$exp"
  done
  [[ -d "$ROOT_BEFORE/runs" ]] && "$BIN/memcore-archive" --slim --root "$ROOT_BEFORE" --out "$OUT/runs" "$ROOT_BEFORE/runs"
  "$BIN/memcore-archive" --verify "$OUT/runs"
  "$BIN/memcore-cache" --cache "$ROOT/cache/llm.sqlite" export --out "$CACHE_FILE"
  [[ -f "$ROOT_BEFORE/cache/llm.sqlite" ]] && "$BIN/memcore-cache" --cache "$ROOT_BEFORE/cache/llm.sqlite" export \
    --out "$CACHE_BEFORE"
fi

if has "$PHASES" tables; then
  # shellcheck disable=SC2086  # PAIRS is a word list
  "$BIN/python" -m experiments.measure.baselines_local_pairs --runs "$OUT/runs" --out "$OUT" --pairs $PAIRS
fi
log "finished"
