"""LongMemEval (Wu et al., 2025): the loader of the official release, its six question types, its protocol with the
official type-specific judge (``longmemeval-judge``) and its session- and turn-level recall. ``README.md`` here
lists the format and every rule."""

DATASETS = {"longmemeval": "memcore.datasets.longmemeval.spec:LONGMEMEVAL"}
PROTOCOLS = {"longmemeval": "memcore.datasets.longmemeval.protocol:LONGMEMEVAL_PROTOCOL"}
JUDGES = {"longmemeval-judge": "memcore.datasets.longmemeval.judge:LONGMEMEVAL_JUDGE"}
METRICS = {
    "session_recall_all_5": "memcore.datasets.longmemeval.recall:SESSION_RECALL_ALL_5",
    "session_recall_all_10": "memcore.datasets.longmemeval.recall:SESSION_RECALL_ALL_10",
    "turn_recall_all_5": "memcore.datasets.longmemeval.recall:TURN_RECALL_ALL_5",
    "turn_recall_all_10": "memcore.datasets.longmemeval.recall:TURN_RECALL_ALL_10",
}
SIM_REPLIES = {"longmemeval": "memcore.datasets.longmemeval.sim:SIM_REPLIES"}
