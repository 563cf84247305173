#!/usr/bin/env bash
# Issue 14: MemCoRe's ablation table in LLM mode on the locomo-llm slice (conv-26 + conv-30, sessions 1-4:
# 153 turns, 85 QA), local backbone, A-MEM protocol, plus reference rows on the same slice.
#
#   experiments/measure/llm_ablation.sh [backbone]     # default local-small (Qwen2.5-Coder-0.5B)
#
# Order: the full model first, then the retrieval ablations (they reuse its snapshot), the reference rows,
# then the construction ablations (each builds its own memory). Every run resumes from the response cache,
# so an interrupted script is cheap to rerun. Results: $MEMCORE_RESULTS/runs/llm_ablation/...; report with
#   memcore-report $MEMCORE_RESULTS/runs/llm_ablation --layout ablation --out results/measured/llm_ablation
set -uo pipefail
cd "$(dirname "$0")/../.."
BACKBONE="${1:-local-small}"
shift || true  # further arguments: overrides for every run (e.g. backbone.server_threads=1 on a busy machine)
RUN=".venv/bin/memcore-run"
COMMON=(experiment_name=llm_ablation dataset=locomo-llm backbone="$BACKBONE" protocol=amem progress=false print_table=false backbone.exclusive=false "$@")
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() {
  local t0=$SECONDS
  log "start: $*"
  if "$RUN" "${COMMON[@]}" "$@"; then log "done in $((SECONDS - t0)) s: $*"; else log "FAILED ($?) after $((SECONDS - t0)) s: $*"; fi
}
for a in none wo_ier wo_neighbor wo_topic wo_keyword; do run method=memcore ablation="$a"; done
run method=memcore-cheap ablation=none
run method=rag_hybrid ablation=none
run method=full_context ablation=none
for a in wo_update wo_merge wo_link wo_denoise; do run method=memcore ablation="$a"; done
log "all runs finished"
