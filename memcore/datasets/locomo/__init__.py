"""LoCoMo: the loader and its cleaning, the download and its sha256, the audit overlay of corrected gold and
the five question categories, the two answer protocols (``amem``, ``locomo``) with their prompts and scorers, and
the two judge presets (``judge-v1``, ``mem0-judge``), and the simulator's replies to their prompts.
``README.md`` here lists every validation and cleaning rule."""

DATASETS = {"locomo": "memcore.datasets.locomo.spec:LOCOMO"}
PROTOCOLS = {"amem": "memcore.datasets.locomo.protocols:AMEM", "locomo": "memcore.datasets.locomo.protocols:LOCOMO"}
JUDGES = {
    "judge-v1": "memcore.datasets.locomo.judges:JUDGE_V1",
    "mem0-judge": "memcore.datasets.locomo.judges:MEM0_JUDGE",
}
SIM_REPLIES = {"locomo": "memcore.datasets.locomo.sim:SIM_REPLIES"}
