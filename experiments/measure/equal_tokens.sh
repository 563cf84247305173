#!/usr/bin/env bash
# Evidence recall and hit at equal context tokens (eval.token_cap), retrieval only, all of LoCoMo.
# Every method hands over at most N tokens; memcore-cheap with packing on and off and each retrieval ablation,
# the flat baselines and full_context's truncation. The first memcore-cheap run builds the memories; every other
# memcore-cheap run reuses that snapshot (packing and the retrieval switches do not change the build).
# The runs are archived (memcore-archive --slim) into results/measured/equal_tokens/runs and re-derived.
# Report: memcore-report "$MEMCORE_RESULTS"/runs/eqtok_* --layout detail --no-reference --out <dir>
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=${MEMCORE_RUN:-.venv/bin/memcore-run}
BUDGETS=${BUDGETS:-"250 500 1000 2000"}
E=(dataset=locomo eval.answer=false progress=false print_table=false build_processes=1)
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { local t0=$SECONDS; log "start: $*"; $RUN "${E[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"; }
# K = 20 without a token cap: packing off (today's default) and on (packing spends what the 20 whole notes cost)
run method=memcore-cheap experiment_name=eqtok_k20_whole
run method=memcore-cheap method.pack=true experiment_name=eqtok_k20
for n in $BUDGETS; do
  run method=memcore-cheap method.pack=true eval.token_cap="$n" experiment_name="eqtok_$n"
  run method=memcore-cheap eval.token_cap="$n" experiment_name="eqtok_${n}_whole"
  for m in rag_hybrid rag_dense rag_bm25 rag_locomo full_context; do
    run method=$m eval.token_cap="$n" experiment_name="eqtok_$n"
  done
  for a in wo_topic wo_keyword wo_neighbor wo_ier; do
    run method=memcore-cheap method.pack=true ablation=$a eval.token_cap="$n" experiment_name="eqtok_$n"
  done
done
# The runs with their items, slim (no question text, hashes or latencies), for results/measured: every committed
# number re-derives from committed items
ROOT="${MEMCORE_RESULTS:-results}"
ARCHIVE=${RUN%memcore-run}memcore-archive
"$ARCHIVE" "$ROOT"/runs/eqtok_* --slim --out results/measured/equal_tokens/runs
"$ARCHIVE" --verify results/measured/equal_tokens/runs
log "all runs finished"
