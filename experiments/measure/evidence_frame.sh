#!/usr/bin/env bash
# Evidence at equal tokens toward the limit, retrieval only, all of LoCoMo. memcore-cheap's default
# (packed, session frame, date / filler / neighbour cues) beside today's packing (line frame, no cue) and
# rag_hybrid with and without the same frame and cues, at each budget; K = 20 with packing off and on; the
# oracle rows are added by experiments/measure/oracle_runs.py. One memcore-cheap build (reused by every run).
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=${MEMCORE_RUN:-.venv/bin/memcore-run}
BUDGETS=${BUDGETS:-"500 2000 1000 250"}
FRAME_BUDGETS=${FRAME_BUDGETS:-"500 2000"}  # the frame alone (credit to the frame vs to the cues)
E=(dataset=locomo eval.answer=false progress=false print_table=false build_processes=1)
TODAY=(method.pack_notes=50 method.pack_frame=line method.pack_cue_date=0 method.pack_cue_filler=0 method.pack_cue_neighbors=0)
CUES=(method.pack_frame=session method.pack_cue_date=1.0 method.pack_cue_filler=2 method.pack_cue_neighbors=1)
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { local t0=$SECONDS; log "start: $*"; $RUN "${E[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"; }
run method=memcore-cheap method.pack=false experiment_name=i41_k20_whole
run method=memcore-cheap experiment_name=i41_k20
for n in $BUDGETS; do
  X="experiment_name=i41_$n"
  run method=memcore-cheap eval.token_cap="$n" "$X"
  run method=memcore-cheap "${TODAY[@]}" eval.token_cap="$n" experiment_name="i41_${n}_today"
  run method=rag_hybrid eval.token_cap="$n" "$X"
  run method=rag_hybrid "${CUES[@]}" eval.token_cap="$n" experiment_name="i41_${n}_cues"
  case " $FRAME_BUDGETS " in *" $n "*)
    run method=memcore-cheap method.pack_notes=50 method.pack_frame=session method.pack_cue_date=0 method.pack_cue_filler=0 \
      method.pack_cue_neighbors=0 eval.token_cap="$n" experiment_name="i41_${n}_frame"
    run method=rag_hybrid method.pack_frame=session eval.token_cap="$n" experiment_name="i41_${n}_frame" ;;
  esac
done
# the ladder's middle step: frame and cues over today's 50 notes (memcore-cheap's default takes 200)
for n in $BUDGETS k20; do
  cap=(eval.token_cap="$n"); [ "$n" = k20 ] && cap=()
  run method=memcore-cheap method.pack_notes=50 "${cap[@]}" experiment_name="ladder50_$n"
done
ROOT="${MEMCORE_RESULTS:-results}"
ARCHIVE=${RUN%memcore-run}memcore-archive
"$ARCHIVE" "$ROOT"/runs/i41_* "$ROOT"/runs/ladder50_* --slim --out results/measured/evidence_frame/runs
PY=${RUN%memcore-run}python
"$PY" -m experiments.measure.slim_items results/measured/evidence_frame/runs
"$PY" -m experiments.measure.oracle_runs results/measured/evidence_frame/runs/i41_{250,500,1000,2000}
log "all runs finished"
