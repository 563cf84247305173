"""LoCoMo: the loader and its cleaning, the download and its sha256, the audit overlay of corrected gold and
the five question categories. ``README.md`` here lists every validation and cleaning rule."""

DATASETS = {"locomo": "memcore.datasets.locomo.spec:LOCOMO"}
