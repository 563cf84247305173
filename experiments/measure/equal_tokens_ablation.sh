#!/usr/bin/env bash
# What the memory already knows, at equal tokens, on all of LoCoMo without an LLM: memcore-cheap's default (the
# session windows in the packer) at 250 / 500 / 1,000 / 2,000 tokens beside rag_hybrid with
# the same session frame and cues, and with the same windows too; the paper's nine ablations (experiment=
# paper_ablation, LLM-free), each packer list off and each list left at 0 on, at 500 and 2,000; K = 20 with packing off and on. Then the
# items are archived slim, the oracle runs written, the reports, the ablation table and the miss classes made.
# Resumable: rerunning skips finished runs. The four construction ablations build their own memories (minutes each).
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=${MEMCORE_RUN:-.venv/bin/memcore-run}
PY=${RUN%memcore-run}python
ROOT="${MEMCORE_RESULTS:-results}"
OUT=${OUT:-results/measured/equal_tokens_ablation}
BUDGETS=${BUDGETS:-"500 2000 1000 250"}
ABL_BUDGETS=${ABL_BUDGETS:-"500 2000"}
E=(dataset=locomo eval.answer=false progress=false print_table=false build_processes=1)
CUES=(method.pack_frame=session method.pack_cue_date=1.0 method.pack_cue_filler=2 method.pack_cue_neighbors=1)
# rag_hybrid takes memcore-cheap's own window knobs (read from the composed config, so the two cannot drift)
read -r -a WINDOWS <<<"$("$PY" - <<'EOF'
from pathlib import Path
from experiments.benchmarks.common import compose
m = compose(["method=memcore-cheap"], Path("/tmp")).method
print(" ".join(f"method.{k}={m[k]}" for k in ("pack_window_bm25", "pack_window_dense", "pack_window_width")))
EOF
)"
# each packer list of the default off, and each list the dev split left at 0 switched on at its best dev value
# (the method knobs a row of the ablation table differs by)
OFF=("method.pack_window_bm25=0.0 method.pack_window_dense=0.0" "method.pack_link=0.6"
  "method.pack_keyword=0.25 method.pack_keyword_graph=3" "method.pack_topic=0.2" "method.pack_link_text=0.5")
OFF_NAMES=(windows plus_link plus_keyword plus_topic plus_link_text)
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() {  # a leading -m (Hydra's multirun flag) goes before the overrides
  local t0=$SECONDS flags=()
  [[ ${1:-} == -m ]] && { flags=(-m); shift; }
  log "start: ${flags[*]} $*"
  $RUN "${flags[@]}" "${E[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"
}
log "windows for rag_hybrid: ${WINDOWS[*]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
for n in $BUDGETS; do
  run method=memcore-cheap eval.token_cap="$n" experiment_name="eta_$n"
  run method=rag_hybrid "${CUES[@]}" eval.token_cap="$n" experiment_name="eta_${n}_cues"
  run method=rag_hybrid "${CUES[@]}" "${WINDOWS[@]}" eval.token_cap="$n" experiment_name="eta_${n}_windows"
done
for n in $ABL_BUDGETS; do
  run -m experiment=paper_ablation method=memcore-cheap backbone=local-small eval.token_cap="$n" experiment_name="eta_abl_$n"
  for i in "${!OFF[@]}"; do
    read -r -a knobs <<<"${OFF[$i]}"
    run method=memcore-cheap "${knobs[@]}" eval.token_cap="$n" experiment_name="eta_off_${OFF_NAMES[$i]}_$n"
  done
done
run method=memcore-cheap method.pack=false experiment_name=eta_k20_whole
run method=memcore-cheap experiment_name=eta_k20
ARCHIVE=${RUN%memcore-run}memcore-archive
"$ARCHIVE" "$ROOT"/runs/eta_* --slim --out "$OUT/runs"
"$PY" -m experiments.measure.slim_items "$OUT/runs"
"$PY" -m experiments.measure.oracle_runs "$OUT"/runs/eta_{250,500,1000,2000}
REPORT=${RUN%memcore-run}memcore-report
# the tables name the runs relative to the note dir, as the note's commands (and the regeneration test) do
REPORT=$(realpath -ms "$REPORT") PY_IN_OUT=$(realpath -ms "$PY")
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
cd "$OUT"
R=$(for n in 250 500 1000 2000; do printf '%s ' "runs/eta_$n" "runs/eta_${n}_cues" "runs/eta_${n}_windows"; done)
# shellcheck disable=SC2086
"$REPORT" $R --no-reference --layout detail --formats md,csv --out report \
  --equal-tokens-reference "rag_hybrid, session frame + cues"
# shellcheck disable=SC2086
"$REPORT" $R --no-reference --layout detail --formats md,csv --no-plots --out report_vs_rag_windows \
  --equal-tokens-reference "rag_hybrid, session frame + cues + windows"
"$PY_IN_OUT" -m experiments.measure.equal_tokens_ablation runs/eta_{500,2000} runs/eta_abl_* runs/eta_off_* --out table.md
# shellcheck disable=SC2086
"$PY_IN_OUT" -m experiments.measure.split_recall $R --reference "rag_hybrid, session frame + cues" --out split_recall.md
# shellcheck disable=SC2086
"$PY_IN_OUT" -m experiments.measure.split_recall $R --reference "rag_hybrid, session frame + cues + windows" \
  --out split_recall_vs_rag_windows.md
cd - >/dev/null
"$PY" -m experiments.measure.miss_classes --results "$ROOT" --out "$OUT/miss_classes.json"
log "all runs finished"
