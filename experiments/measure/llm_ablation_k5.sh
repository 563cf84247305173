#!/usr/bin/env bash
# MemCoRe's LLM-mode rows at K_final = 5 (eval.note_cap=5) on conv-26 of locomo-llm, answers included, over the
# 0.5B model's memory (built by the first run, or reused from the snapshot store). At K = 20 every conv-26 note
# (16) is retrieved, so the retrieval ablations differ only in note order; at K = 5 they differ in what the
# answerer reads, and IER's judge sees 5 notes. Then IER with a judge that can say "insufficient": the 1.5B model retrieves over the
# 0.5B model's memory (memory_backbone), retrieval only, on the first 20 questions of categories 1-4.
#
#   MEMCORE_RESULTS=<root> experiments/measure/llm_ablation_k5.sh [overrides...]   # e.g. backbone.server_threads=1
#
# K5_TAG (default llm_ablation_k5) prefixes the experiment names: a rerun under a new tag rebuilds every row's run
# dir from the response cache and the snapshot store (seconds per row, no server), e.g. after a report change.
#
# Then: python -m experiments.measure.ier_verdicts --on <root>/runs/ier_strong_judge_k5/.../none \
#         --off <root>/runs/ier_strong_judge_k5/.../wo_ier       (the judge against the gold, recall before/after)
#       memcore-report <root>/runs/llm_ablation_k5 <root>/runs/llm_ablation_k5_noier --layout ablation --out <dir>
#       memcore-report <root>/runs/llm_ablation_k5_ref --layout detail --out <dir>      (the reference rows)
# The table it made before items were committed (sessions 8-10) is results/history/llm_ablation_k5/ (not kept); a
# rerun archives its items into results/measured/llm_ablation_k5/runs.
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=".venv/bin/memcore-run"
SMALL=qwen2.5-coder-0.5b-instruct-q4_k_m
C=(dataset=locomo-llm 'dataset.conversations=[conv-26]' protocol=amem progress=false print_table=false method=memcore eval.note_cap=5 "$@")
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { log "start: $*"; "$RUN" "${C[@]}" "$@"; log "done ($?): $*"; }
TAG="${K5_TAG:-llm_ablation_k5}"
run backbone=local-small experiment_name=$TAG ablation=none     # IER on: judge + answer per question
run backbone=local-small experiment_name=$TAG ablation=wo_ier
# IER stops at round 1 on every question with the 0.5B judge, so the other ablations run with IER off (a
# retrieval ablation costs only its answers; a construction ablation builds its own memory, 5-40 min on one
# thread); the IER-off full model is the row they are compared with.
for a in none wo_keyword wo_topic wo_neighbor wo_merge wo_update wo_denoise wo_link; do
  run backbone=local-small experiment_name=${TAG}_noier ablation.ier=false ablation=$a
done
# reference rows: the same slice and K for the cheap variant and hybrid RAG; full_context reads the whole conversation
run backbone=local-small experiment_name=${TAG}_ref method=memcore-cheap
run backbone=local-small experiment_name=${TAG}_ref method=rag_hybrid
run backbone=local-small experiment_name=${TAG}_ref method=full_context eval.note_cap=null
IDS='["conv-26#0","conv-26#1","conv-26#2","conv-26#3","conv-26#4","conv-26#5","conv-26#6","conv-26#7","conv-26#8","conv-26#9","conv-26#10","conv-26#11","conv-26#12","conv-26#13","conv-26#14","conv-26#31","conv-26#82","conv-26#83","conv-26#84","conv-26#85"]'
for a in none wo_ier; do
  run backbone=local memory_backbone=$SMALL eval.answer=false "dataset.item_ids=$IDS" experiment_name=${TAG/llm_ablation_k5/ier_strong_judge_k5} ablation=$a
done
# What a reader needs to re-derive the tables: every run's items, and the replies that replay it.
ROOT="${MEMCORE_RESULTS:-results}"
.venv/bin/memcore-archive "$ROOT/runs/$TAG" "$ROOT/runs/${TAG}_noier" "$ROOT/runs/${TAG}_ref" --out results/measured/llm_ablation_k5/runs
.venv/bin/memcore-archive --verify results/measured/llm_ablation_k5/runs
.venv/bin/memcore-cache export --out "results/measured/cache/$TAG.jsonl.gz"
log "all runs finished"
