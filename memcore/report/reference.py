"""The paper's numbers (``results/reference/*.csv``), keyed the way our runs are named, and the order tables
list methods and ablations in.

The main table's method column uses the paper's names; each method's spec says which row is its
(``MethodSpec.paper_row``: e.g. the paper's ``locomo`` row is our ``full_context``). All values are percentages.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memcore.interfaces import MethodSpec
from memcore.methods import method_specs

MAIN_CSV = "memcore_paper_main_table.csv"
ABLATION_CSV = "memcore_paper_ablation_table.csv"


class SpecView(Mapping[str, str]):
    """A read-only map built from the registered specs each time it is read: ``entry(spec)`` gives a spec's
    ``(key, value)`` or None. A view rather than a table, so no method is listed here and reading the module
    imports none."""

    def __init__(self, entry: Callable[[MethodSpec], tuple[str, str] | None]) -> None:
        self._entry = entry

    def _items(self) -> dict[str, str]:
        return dict(e for spec in method_specs() if (e := self._entry(spec)) is not None)

    def __getitem__(self, key: str) -> str:
        return self._items()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())


#: paper method name -> our method name (``MethodSpec.paper_row``).
PAPER_METHOD_NAMES: Mapping[str, str] = SpecView(lambda s: (s.paper_row, s.name) if s.paper_row else None)
#: Paper methods whose rows run this harness's own reimplementation, not the authors' code: the tables say so
#: (``MethodSpec.reimplemented``).
REIMPLEMENTED: Mapping[str, str] = SpecView(lambda s: (s.name, s.reimplemented) if s.reimplemented else None)
BACKBONE_ORDER: tuple[str, ...] = ("gpt-4o-mini", "gpt-4o", "qwen3-8b", "qwen3-14b", "local", "local-small")


def method_order() -> tuple[str, ...]:
    """The methods tables list first, in order (``MethodSpec.report_rank``); the others follow by name."""
    ranked = sorted((s.report_rank, s.name) for s in method_specs() if s.report_rank is not None)
    return tuple(name for _, name in ranked)


def ablation_order() -> tuple[str, ...]:
    """Every ablation name, in the order tables list them: each ranked method's ``ablations`` in method order."""
    specs = {s.name: s for s in method_specs()}
    return tuple(dict.fromkeys(a for name in method_order() for a in specs[name].ablations))


# The setting the paper's numbers were measured in; other runs are flagged as not comparable.
PAPER_DATASET = "locomo"
PAPER_PROTOCOL = "amem"

# Our metric keys -> column of the paper's main CSV.
MAIN_COLUMNS: dict[str, str] = {
    "cat1": "multi_hop_f1",
    "cat2": "temporal_f1",
    "cat3": "open_domain_f1",
    "cat4": "single_hop_f1",
    "cat5": "adversarial_f1",
    "f1": "weighted_f1",
    "bleu1": "weighted_bleu1",
}
ABLATION_COLUMNS: dict[str, str] = {"f1": "f1", "bleu1": "bleu1", "recall": "recall", "hit_rate": "hit_rate"}


class ReferenceError(ValueError):
    """The reference CSVs are missing or malformed."""


@dataclass
class PaperNumbers:
    """``main[(backbone, our_method)]`` and ``ablation[(backbone, ablation)]``: metric key -> percent."""

    main: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    ablation: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)

    def main_row(self, backbone: str, method: str) -> dict[str, float] | None:
        return self.main.get((backbone, method))

    def ablation_row(self, backbone: str, ablation: str) -> dict[str, float] | None:
        return self.ablation.get((backbone, ablation))


def _rows(path: Path, required: list[str]) -> list[dict[str, str]]:
    if not path.is_file():
        raise ReferenceError(
            f"{path} is missing; the paper's tables live in results/reference/ (pass --reference DIR)."
        )
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise ReferenceError(f"{path}: missing column(s) {', '.join(missing)}.")
        return list(reader)


def _num(path: Path, row: dict[str, str], column: str) -> float:
    try:
        return float(row[column])
    except ValueError:
        raise ReferenceError(f"{path}: {column}={row[column]!r} is not a number.") from None


def load_paper_numbers(directory: Path) -> PaperNumbers:
    """Read both reference tables from ``directory``."""
    directory = Path(directory)
    out = PaperNumbers()
    main_path = directory / MAIN_CSV
    for row in _rows(main_path, ["backbone", "method", *MAIN_COLUMNS.values()]):
        paper_name = row["method"].strip()
        if paper_name not in PAPER_METHOD_NAMES:
            raise ReferenceError(f"{main_path}: unknown method {paper_name!r}; known: {', '.join(PAPER_METHOD_NAMES)}.")
        key = (row["backbone"].strip(), PAPER_METHOD_NAMES[paper_name])
        out.main[key] = {k: _num(main_path, row, col) for k, col in MAIN_COLUMNS.items()}
    abl_path = directory / ABLATION_CSV
    for row in _rows(abl_path, ["backbone", "ablation", *ABLATION_COLUMNS.values()]):
        key = (row["backbone"].strip(), row["ablation"].strip())
        out.ablation[key] = {k: _num(abl_path, row, col) for k, col in ABLATION_COLUMNS.items()}
    return out


def default_reference_dir() -> Path:
    """``results/reference`` of this repository."""
    return Path(__file__).resolve().parents[2] / "results" / "reference"
