#!/usr/bin/env bash
# J for full_context on exactly the items a MemCoRe LLM-mode run answered (same answerer, same judge),
# both judge presets x 3 runs, judged by the 1.5B model on its own one-thread server.
#
#   MEMCORE_RESULTS=<root> experiments/measure/judge_full_context.sh <memcore run dir> [overrides...]
#
# The item ids are read from the MemCoRe run's items.jsonl; the rescored runs go to <root>/runs/j15_fc_judged/<preset>.
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC="${1:?usage: judge_full_context.sh <memcore run dir> [overrides...]}"
shift
ROOT="${MEMCORE_RESULTS:-results}"
IDS=$(.venv/bin/python -c 'import json,sys; print(json.dumps([json.loads(l)["item_id"] for l in open(sys.argv[1]) if l.strip()]))' "$SRC/items.jsonl")
.venv/bin/memcore-run dataset=locomo-llm 'dataset.conversations=[conv-26]' "dataset.item_ids=$IDS" backbone=local-small \
  protocol=amem progress=false print_table=false method=full_context experiment_name=j15_fc "$@"
RUN="$ROOT/runs/j15_fc/locomo-llm/local-small/amem/full_context/none"
for p in judge-v1 mem0-judge; do
  .venv/bin/memcore-rescore "$RUN" --out "$ROOT/runs/j15_fc_judged/$p" --judge-preset "$p" --judge-runs 3 \
    --judge-backbone local --judge-server server_threads=1
done
