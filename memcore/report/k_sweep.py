"""A k sweep (``experiment=amem_k_sweep`` for A-MEM): F1 / BLEU-1 / recall by k and category, the chosen k per
backbone, and writing that k into the map ``experiment=paper_main`` reads. The runs swept are those of a method
whose spec names the knob a sweep varies (``MethodSpec.sweep_knob``: A-MEM's ``retrieve_k``).

The authors (WujiangXu/A-mem ``run_k_sweep.sh``) re-run the QA step for k = 10, 15, ..., 50 and keep, per model,
the k with the best F1. :func:`chosen_k` does the same over the sweep's runs: per backbone, the k with the highest
overall F1 (categories 1-5, the paper's), ties to the smaller k. :func:`write_chosen_k` writes it into
``retrieve_k_by_backbone`` of ``configs/method/amem.yaml``; each later run records the k it used in its
``config.yaml`` as ``method.retrieve_k``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memcore.eval.aggregate import category_name
from memcore.methods import find_method, method_specs
from memcore.report.collect import ReportInputError, display_path
from memcore.report.summary import RunSummary
from memcore.report.tables import CATEGORIES, Table, fmt

#: (metric key in metrics.json, column label)
SWEEP_METRICS: tuple[tuple[str, str], ...] = (("f1", "F1"), ("bleu1", "BLEU-1"), ("recall", "Recall"))


def _swept_k(s: RunSummary) -> int | None:
    """The k an answered run of a method with a sweep knob recorded, else None."""
    spec = find_method(s.run.method)
    method = s.run.config.get("method") or {}
    if spec is None or not spec.sweep_knob or method.get(spec.sweep_knob) is None or not s.run.answered:
        return None
    return int(method[spec.sweep_knob])


def sweep_runs(summaries: Sequence[RunSummary]) -> list[tuple[str, int, RunSummary]]:
    """``(backbone, k, summary)`` of every answered run of a method with a sweep knob, sorted by backbone then
    k; a report input error when there is none or two runs share a backbone and k (mixed sweeps)."""
    out = [(s.run.backbone, k, s) for s in summaries if (k := _swept_k(s)) is not None]
    if not out:
        swept = " / ".join(s.name for s in method_specs() if s.sweep_knob) or "k-sweep"
        raise ReportInputError(
            f"--layout k_sweep: no answered {swept} runs among the inputs (run a k-sweep experiment,"
            " configs/experiment/*k_sweep.yaml)."
        )
    seen: dict[tuple[str, int], str] = {}
    for backbone, k, s in out:
        where = display_path(s.run.path)
        if (backbone, k) in seen:
            raise ReportInputError(
                f"--layout k_sweep: two {s.run.method} runs with backbone {backbone} and k={k}"
                f" ({seen[(backbone, k)]}, {where}); give one sweep's runs."
            )
        seen[(backbone, k)] = where
    return sorted(out, key=lambda t: (t[0], t[1]))


def _value(s: RunSummary, key: str, category: int | None) -> float | None:
    block = (
        (s.run.metrics.get("by_category") or {}).get(str(category))
        if category is not None
        else s.run.metrics.get("overall")
    )
    v = (block or {}).get(key)
    return None if v is None else 100.0 * float(v)


def chosen_k(summaries: Sequence[RunSummary]) -> dict[str, int]:
    """Per backbone, the k with the best overall F1 (categories 1-5); ties go to the smaller k."""
    best: dict[str, tuple[float, int]] = {}
    for backbone, k, s in sweep_runs(summaries):
        f1 = _value(s, "f1", None)
        if f1 is None:
            continue
        if backbone not in best or f1 > best[backbone][0]:
            best[backbone] = (f1, k)
    return {b: k for b, (_, k) in sorted(best.items())}


def k_sweep_table(summaries: Sequence[RunSummary]) -> Table:
    """One row per (backbone, k): F1, BLEU-1 and recall per category and overall; the chosen k marked."""
    runs = sweep_runs(summaries)
    chosen = chosen_k(summaries)
    columns = ["Backbone", "k", "Chosen"]
    for c in CATEGORIES:
        columns += [f"{label} {c} {category_name(c)}" for _, label in SWEEP_METRICS]
    columns += [f"{label} overall" for _, label in SWEEP_METRICS] + ["n"]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    for backbone, k, s in runs:
        mark = "chosen" if chosen.get(backbone) == k else ""
        row = [backbone, str(k), mark]
        rec: dict[str, Any] = {"backbone": backbone, "k": k, "chosen": bool(mark), "run_dir": display_path(s.run.path)}
        for c in (*CATEGORIES, None):
            for key, _ in SWEEP_METRICS:
                v = _value(s, key, c)
                row.append(fmt(v))
                rec[f"{key}_{'overall' if c is None else f'cat{c}'}"] = v
        n = int(s.run.metrics.get("n_items") or 0)
        row.append(str(n))
        rec["n"] = n
        rows.append(row)
        records.append(rec)
    datasets = sorted({s.run.dataset for _, _, s in runs})
    notes = [
        "A-MEM's k sweep (run_k_sweep.sh: k = 10, 15, ..., 50, the memory built once): per backbone the k with the"
        " best overall F1 (categories 1-5, ties to the smaller k) is chosen, as the authors keep the best k per model.",
        f"Dataset: {', '.join(datasets)}. Recall: evidence recall of the retrieved notes (categories with evidence).",
        "Write the chosen k into configs/method/amem.yaml (retrieve_k_by_backbone), which experiment=paper_main reads:"
        " memcore-report <sweep dir> --layout k_sweep --write-amem-k",
    ]
    return Table(
        "A-MEM k sweep (F1 / BLEU-1 / recall by k and category)", columns, rows, notes, records, text_columns=3
    )


_MAP_KEY = re.compile(r"^retrieve_k_by_backbone:\s*(#.*)?$")
_MAP_ENTRY = re.compile(r"^(\s+)([A-Za-z0-9_.\-]+):\s*(\d+)\s*(#.*)?$")


def write_chosen_k(config: Path, chosen: Mapping[str, int], note: str) -> dict[str, tuple[int | None, int]]:
    """Set ``retrieve_k_by_backbone.<backbone>`` in the method config ``config`` (a YAML file, edited line by line so
    its comments stay) to each chosen k, with ``# <note>`` after it; a backbone not in the map is added at its end.
    Returns ``{backbone: (old k or None, new k)}``. Raises ReportInputError when the file has no such map."""
    try:
        lines = config.read_text(encoding="utf-8").splitlines(keepends=True)
    except OSError as exc:
        raise ReportInputError(f"cannot read {config}: {exc.strerror or exc}") from None
    start = next((i for i, line in enumerate(lines) if _MAP_KEY.match(line.rstrip("\n"))), None)
    if start is None:
        raise ReportInputError(f"{config} has no retrieve_k_by_backbone map to write the chosen k into.")
    end = start + 1
    indent = "  "
    entries: dict[str, int] = {}
    while end < len(lines) and (m := _MAP_ENTRY.match(lines[end].rstrip("\n"))):
        indent = m.group(1)
        entries[m.group(2)] = end
        end += 1
    changes: dict[str, tuple[int | None, int]] = {}
    added: list[str] = []
    for backbone, k in chosen.items():
        text = f"{indent}{backbone}: {int(k)}   # {note}\n"
        if backbone in entries:
            old = _MAP_ENTRY.match(lines[entries[backbone]].rstrip("\n"))
            changes[backbone] = (int(old.group(3)) if old else None, int(k))
            lines[entries[backbone]] = text
        else:
            changes[backbone] = (None, int(k))
            added.append(text)
    lines[end:end] = added
    try:
        config.write_text("".join(lines), encoding="utf-8")
    except OSError as exc:
        raise ReportInputError(f"cannot write {config}: {exc.strerror or exc}") from None
    return changes


__all__ = ["chosen_k", "k_sweep_table", "sweep_runs", "write_chosen_k"]
