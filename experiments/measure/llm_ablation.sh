#!/usr/bin/env bash
# MemCoRe's ablation table in LLM mode on the locomo-llm slice (conv-26 + conv-30, sessions 1-4:
# 153 turns, 85 QA), local backbone, A-MEM protocol.
#
#   experiments/measure/llm_ablation.sh [backbone] [overrides...]   # default local-small (Qwen2.5-Coder-0.5B)
#
# Three experiments, in an order that puts the cheapest informative rows first:
#   llm_ablation_retrieval  eval.answer=false: evidence recall / hit (at K_final and at token budgets) for the
#                           full model and every ablation; IER's judge and sub-query calls still run.
#   llm_ablation_noier      eval.answer=false and IER off in every row (ablation.ier=false): each component's
#                           effect on retrieval from the same LLM-built memory; its only LLM call, the
#                           question's decomposition, comes from the cache the retrieval pass filled (seconds
#                           per row). Say so beside its numbers: it equals the IER rows only where IER stops at
#                           round 1, which the retrieval pass logs per question (rounds, ier_stop).
#   llm_ablation            the same runs with answers (F1, BLEU-1): IER's calls come from the response cache
#                           that the retrieval pass filled, so each row costs only its answer calls. On the 0.5B
#                           model and 2 cores an answer over K_final = 20 merged notes (~4,800 prompt tokens)
#                           takes 2-3 min, so this pass comes last.
# On 2 CPU cores and the 0.5B model the full build of the slice takes about an hour (ingest ~9 s/turn, gate
# ~15 s/turn); every run resumes from the response cache and the snapshot store, so an interrupted script is
# cheap to rerun. Report with
#   memcore-report $MEMCORE_RESULTS/runs/llm_ablation_retrieval --layout ablation --out results/measured/llm_ablation_retrieval
set -uo pipefail
cd "$(dirname "$0")/../.."
BACKBONE="${1:-local-small}"
shift || true
RUN=".venv/bin/memcore-run"
COMMON=(dataset=locomo-llm backbone="$BACKBONE" protocol=amem progress=false print_table=false "$@")
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() {
  local t0=$SECONDS
  log "start: $*"
  if "$RUN" "${COMMON[@]}" "$@"; then log "done in $((SECONDS - t0)) s: $*"; else log "FAILED ($?) after $((SECONDS - t0)) s: $*"; fi
}
R=(experiment_name=llm_ablation_retrieval eval.answer=false)
N=(experiment_name=llm_ablation_noier eval.answer=false ablation.ier=false)
A=(experiment_name=llm_ablation)
run "${R[@]}" method=memcore ablation=none      # builds the memory (the retrieval ablations reuse it)
run "${R[@]}" method=memcore ablation=wo_ier    # cached calls only (the decomposition)
for a in none wo_neighbor wo_topic wo_keyword; do run "${N[@]}" method=memcore ablation="$a"; done  # cached calls only
for a in wo_merge wo_link wo_update wo_denoise; do  # each builds its own memory; its IER-off row is then free
  run "${R[@]}" method=memcore ablation="$a"
  run "${N[@]}" method=memcore ablation="$a"
done
for a in wo_neighbor wo_topic wo_keyword; do run "${R[@]}" method=memcore ablation="$a"; done
run "${A[@]}" method=memcore ablation=none      # F1 / BLEU-1 of the full model
run "${A[@]}" method=memcore ablation=wo_ier
for a in wo_neighbor wo_topic wo_keyword wo_merge wo_link wo_update wo_denoise; do run "${A[@]}" method=memcore ablation="$a"; done
log "all runs finished"
