"""LongMemEval as the harness sees it: its file, loader, question types, evidence levels and protocol."""

from __future__ import annotations

from pathlib import Path

from memcore.datasets.longmemeval.categories import LONGMEMEVAL_CATEGORIES, TYPE_NOTE
from memcore.datasets.longmemeval.download import DEFAULT_FILE
from memcore.datasets.longmemeval.loader import HINT, load_longmemeval
from memcore.datasets.paths import find_data_file, memcore_home
from memcore.datasets.spec import DatasetFile, DatasetSpec

#: The environment variable naming the release file (or a folder holding it).
ENV_VAR = "MEMCORE_LONGMEMEVAL"


def locate(path: str | None) -> Path:
    """``dataset.path``, ``$MEMCORE_LONGMEMEVAL``, ``../shared/data/longmemeval/<file>``, the download location
    (``$MEMCORE_HOME/data/<file>``), for the release's LongMemEval_S file."""
    return find_data_file(
        path,
        filename=DEFAULT_FILE,
        names=[(DEFAULT_FILE,)],
        env_var=ENV_VAR,
        shared=("longmemeval", DEFAULT_FILE),
        explicit_key="dataset.path",
        hint=HINT,
        defaults=(memcore_home() / "data" / DEFAULT_FILE,),
    )


def load(path: Path) -> DatasetFile:
    return load_longmemeval(path)


LONGMEMEVAL = DatasetSpec(
    kind="longmemeval",
    description="LongMemEval (Wu et al., 2025): 500 questions in six types, each with its own chat history",
    locate=locate,
    load=load,
    categories=LONGMEMEVAL_CATEGORIES,
    evidence_unit="a user turn marked has_answer (D<session>:<turn>); its session at session level",
    protocols=("longmemeval",),
    evidence_levels=("turn", "session"),
    table_notes=(TYPE_NOTE,),
)
