#!/usr/bin/env bash
# Remeasure the local_compare table with its items. Every method of
# configs/experiment/local_compare.yaml on locomo-mini (conv-26 sessions 1-3: 58 turns, 25 QA), A-MEM protocol, the
# local 0.5B model (backbone=local-small, n_ctx 16384), one run at a time, as the commands of the old note
# (results/history/local_compare.md, sessions 2-4, items not kept) ran them. Then the runs archived with their items,
# verified, the response cache exported (so the tables re-derive and the runs replay without a server), and the
# main table written next to the items. About 3 hours on 2 CPU cores; not run yet.
#
#   MEMCORE_RESULTS=<root> experiments/measure/local_compare.sh [overrides...]   # e.g. backbone.server_threads=1
#
# PHASES (default "main archive report") picks the parts; METHODS (default: the experiment's sweep) the methods;
# LC_TAG (default local_compare) the experiment name. A rerun resumes from the response cache.
set -uo pipefail
cd "$(dirname "$0")/../.."
RUN=${MEMCORE_RUN:-.venv/bin/memcore-run}
TAG=${LC_TAG:-local_compare}
PHASES=${PHASES:-"main archive report"}
METHODS=${METHODS:-"memcore full_context amem lightmem mem0 memgpt fluxmem fluxmem-facts fluxmem-no-refine fluxmem-no-consolidate memcore-batched"}
C=(experiment=local_compare progress=false print_table=false experiment_name="$TAG" "$@")
log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
run() { local t0=$SECONDS; log "start: $*"; "$RUN" "${C[@]}" "$@" && log "done in $((SECONDS - t0)) s: $*" || log "FAILED after $((SECONDS - t0)) s: $*"; }
ROOT="${MEMCORE_RESULTS:-results}"
OUT="results/measured/$TAG"
if [[ " $PHASES " == *" main "* ]]; then
  for m in $METHODS; do
    run method="$m"
  done
fi
if [[ " $PHASES " == *" archive "* ]]; then
  ARCHIVE=${RUN%memcore-run}memcore-archive
  CACHE=${RUN%memcore-run}memcore-cache
  "$ARCHIVE" "$ROOT/runs/$TAG" --out "$OUT/runs"
  "$ARCHIVE" --verify "$OUT/runs"
  "$CACHE" export --out "results/measured/cache/$TAG.jsonl.gz"
fi
if [[ " $PHASES " == *" report "* ]]; then
  REPORT=${RUN%memcore-run}memcore-report
  [[ $REPORT == /* || $REPORT != */* ]] || REPORT="$PWD/$REPORT"
  # from the note's dir, so runs.txt names the archived runs relative to it
  (cd "$OUT" && "$REPORT" "runs/$TAG" --layout main --out .)
fi
log "all runs finished"
