#!/usr/bin/env bash
# Evidence packing in LLM mode, answers included, at one equal context budget.
# conv-26 of locomo-llm, the local 0.5B model, K_final = 5 as in the K = 5 table (llm_ablation_k5.sh), and
# eval.token_cap=$TOKENS (default 500) for every method: memcore with packing off (its 5 whole notes cut to the
# budget) and on (the raw turns of its ranked notes fill the budget), memcore-cheap packed, rag_hybrid at K = 5
# turns (as in the K = 5 table) and ranking as deep as the budget holds (eval.note_cap=null: the equal-token row). The first memcore run builds the memory; the second reuses that snapshot (packing does
# not change the build). Then the retrieval ablations over the same build (the IER-off
# rows are paired with the IER-off full model), the runs archived with their items, and the response cache
# exported so the tables re-derive without a server.
#
#   MEMCORE_RESULTS=<root> experiments/measure/llm_packing.sh [overrides...]
#
# Report: memcore-report results/measured/llm_packing/runs --layout detail --out results/measured/llm_packing
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=${MEMCORE_RUN:-.venv/bin/memcore-run}
TOKENS=${TOKENS:-500}
TAG=${PACK_TAG:-llm_packing_k5}
PHASES=${PHASES:-"main ablations archive"}
C=(dataset=locomo-llm 'dataset.conversations=[conv-26]' protocol=amem progress=false print_table=false
   backbone=local-small eval.note_cap=5 eval.token_cap="$TOKENS" build_processes=1 "$@")
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { local t0=$SECONDS; log "start: $*"; "$RUN" "${C[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"; }
ROOT="${MEMCORE_RESULTS:-results}"
if [[ " $PHASES " == *" main "* ]]; then
  run method=memcore experiment_name="${TAG}_whole"
  run method=memcore method.pack=true experiment_name="$TAG"
  run method=memcore-cheap method.pack=true experiment_name="$TAG"
  run method=rag_hybrid experiment_name="$TAG"                        # K = 5 turns, as in the K = 5 table
  run method=rag_hybrid eval.note_cap=null experiment_name="${TAG}_fill"  # ranks as deep as the budget holds
fi
if [[ " $PHASES " == *" ablations "* ]]; then
  # packed, over the same build: IER on without IER, then the IER-off full model and its retrieval ablations
  run method=memcore method.pack=true ablation=wo_ier experiment_name="$TAG"
  for a in none wo_keyword wo_topic wo_neighbor; do
    run method=memcore method.pack=true ablation.ier=false ablation=$a experiment_name="${TAG}_noier"
  done
fi
if [[ " $PHASES " == *" archive "* ]]; then
  ARCHIVE=${RUN%memcore-run}memcore-archive
  CACHE=${RUN%memcore-run}memcore-cache
  dirs=()
  for d in "$ROOT/runs/${TAG}" "$ROOT/runs/${TAG}_whole" "$ROOT/runs/${TAG}_fill" "$ROOT/runs/${TAG}_noier"; do [[ -d $d ]] && dirs+=("$d"); done
  "$ARCHIVE" "${dirs[@]}" --out "results/measured/${TAG/_k5/}/runs"
  "$ARCHIVE" --verify "results/measured/${TAG/_k5/}/runs"
  "$CACHE" export --out "results/measured/cache/$TAG.jsonl.gz"
fi
log "all runs finished"
