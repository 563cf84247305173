#!/usr/bin/env bash
# memcore-cheap retrieval only on all of LoCoMo (no LLM), after the fidelity fixes, beside the
# numbers before them (results/measured/memcore_cheap_retrieval.md: recall 68.19 / hit 76.11 at K = 20).
# Variants of the IER fusion and the neighbour weight reuse the full model's snapshots.
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=".venv/bin/memcore-run"
E=(dataset=locomo eval.answer=false method=memcore-cheap progress=false print_table=false build_processes=1)
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { local t0=$SECONDS; log "start: $*"; "$RUN" "${E[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"; }
run experiment_name=cheap_after ablation=none
for a in wo_ier wo_neighbor wo_topic wo_keyword; do run experiment_name=cheap_after ablation=$a; done
# IER fusion variants (the cheap preset keeps sub-query weight 0.5; memcore's default reserves 2 slots)
run experiment_name=cheap_ier_w05_r0 method.ier_reserved=0
run experiment_name=cheap_ier_w1_r0 method.ier_reserved=0 method.ier_subquery_weight=1.0
run experiment_name=cheap_ier_w1_r2 method.ier_subquery_weight=1.0
run experiment_name=cheap_ier_w05_r1 method.ier_reserved=1
run experiment_name=cheap_nbr_w1 method.neighbor_weight=1.0
for a in wo_update wo_merge; do run experiment_name=cheap_after ablation=$a; done
log "all runs finished"
