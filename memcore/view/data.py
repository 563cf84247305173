"""What the run viewer shows, as plain JSON-able dicts: built from a run dir (live or archived), its config's LoCoMo
slice and the report's own tables and intervals.

The site loads three kinds of data file: one *index* per run (every item's scores and short texts, loaded at start so
the item list filters without waiting), one *detail chunk* per run and conversation (notes, rounds, judge verdicts,
usage; loaded when an item is opened) and one *conversation* per conversation of the slice (its turns, shared by both
runs). Lists of turn ids are stored as indices into the conversation's turns, runs of consecutive turns as
``[first, last]`` pairs (:func:`encode_ids`); notes repeated across a conversation's items (a full-context run hands
every question the same hundreds of turns) are stored once per chunk and referenced by index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memcore.config import CONFIG_DIR, ConfigError
from memcore.config_aliases import tokens_used
from memcore.datasets.errors import DataError
from memcore.datasets.registry import dataset_of
from memcore.eval.aggregate import format_table, slice_line
from memcore.eval.bootstrap import metric_value, paired_delta_ci
from memcore.eval.disclosure import evidence_cell
from memcore.eval.published import published_disclosure
from memcore.itemlog import ITEMS, ItemLogError, LoggedItem
from memcore.pipeline.load import load_slice
from memcore.report.ablation_table import run_k, run_switches
from memcore.report.collect import ReportInputError, RunData, display_path, find_run_dirs, load_run
from memcore.report.detail_table import detail_table
from memcore.report.main_table import answer_cell, evidence_info, judge_cell
from memcore.report.summary import cost_summary, summarize_run, usage_totals

#: Paired-interval settings: the report's defaults (``memcore-report --n-boot/--seed/--alpha``).
N_BOOT, SEED, ALPHA = 1000, 0, 0.05
#: The metrics the two-run view pairs per category (when both runs carry them).
DELTA_METRICS: tuple[str, ...] = ("f1", "judge", "recall")
#: Index columns, in the order the site's ``cols`` lists them.
INDEX_COLUMNS: tuple[str, ...] = (
    "id",
    "conv",
    "cat",
    "q",
    "gold",
    "ans",
    "f1",
    "bleu1",
    "judge",
    "recall",
    "hit",
    "ctok",
    "notes",
    "rounds",
    "grank",
    "gmiss",
    "tok",
    "lat",
)


class ViewInputError(ValueError):
    """A run the viewer cannot show (no items, a torn item log, a slice mismatch): one line, what to do."""


@dataclass
class ViewRun:
    """One run as the viewer reads it: the report's :class:`RunData` (items already read and checked)."""

    run: RunData
    label: str
    path: str

    @property
    def items(self) -> list[LoggedItem]:
        return self.run.items


def read_checked_items(run: RunData) -> list[LoggedItem]:
    """The run's items as the report reads them (:attr:`RunData.items`: a torn log, a corrupt archive or fewer items
    than ``metrics.json`` counts is refused), and none at all is refused too."""
    try:
        items = run.items
    except ItemLogError as exc:
        raise ViewInputError(str(exc)) from None
    if not items:
        raise ViewInputError(f"{run.path}: the run has no items ({ITEMS} is missing or empty); nothing to show.")
    bad = [i for i, r in enumerate(items) if "category" not in r]
    if bad:
        raise ViewInputError(f"{run.path}: item {bad[0] + 1} of the item log has no item_id/category; re-run it.")
    return items


def load_view_run(path: str | Path) -> ViewRun:
    """One run dir (live or archived) with its items read and checked; a dir holding several runs is an error."""
    try:
        dirs = find_run_dirs([path])
        if len(dirs) != 1:
            raise ViewInputError(
                f"{path}: holds {len(dirs)} runs; pass one run dir (the folder with metrics.json), or two for the diff."
            )
        run = load_run(dirs[0])
    except ReportInputError as exc:
        raise ViewInputError(str(exc)) from None
    run._items = read_checked_items(run)
    return ViewRun(run, run.label(), display_path(run.path))


def slice_key(run: RunData) -> dict[str, Any]:
    """What makes two runs' items pairable: the dataset name and its slice (conversations, sessions, categories,
    named items)."""
    info = dict(run.info.get("slice") or {})
    info.pop("n_items", None)
    return {"dataset": run.dataset, **info}


def check_same_slice(a: ViewRun, b: ViewRun) -> None:
    """Refuse a diff of runs on different slices (their items would not pair)."""
    ka, kb = slice_key(a.run), slice_key(b.run)
    ids_a, ids_b = {r.item_id for r in a.items}, {r.item_id for r in b.items}
    if ka != kb or ids_a != ids_b:
        what = f"{ka} vs {kb}" if ka != kb else f"{len(ids_a ^ ids_b)} items are in only one of them"
        raise ViewInputError(
            f"the two runs are on different slices ({what}); the diff view pairs items, so pass two runs of one slice."
        )


# ------------------------------------------------------------------------------------------------ id encoding
def encode_ids(ids: Iterable[str], index: Mapping[str, int]) -> list[Any]:
    """Turn ids as indices into the conversation's turns; three or more consecutive indices become ``[first,
    last]``; an id the conversation does not hold stays a string."""
    out: list[Any] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append([run[0], run[-1]])
        else:
            out.extend(run)
        run.clear()

    for dia in ids:
        i = index.get(str(dia))
        if i is None:
            flush()
            out.append(str(dia))
        elif run and i == run[-1] + 1:
            run.append(i)
        else:
            flush()
            run.append(i)
    flush()
    return out


def decode_ids(encoded: Sequence[Any], turns: Sequence[str]) -> list[str]:
    """Inverse of :func:`encode_ids` (``turns``: the conversation's turn ids in order)."""
    out: list[str] = []
    for e in encoded:
        if isinstance(e, list):
            out.extend(turns[e[0] : e[1] + 1])
        elif isinstance(e, int):
            out.append(turns[e])
        else:
            out.append(str(e))
    return out


def run_lengths(values: Sequence[Any]) -> list[list[Any]]:
    """``[[value, count], ...]``: consecutive equal values collapsed (a note's scores and channels, which a
    full-context or MemGPT item repeats hundreds of times)."""
    out: list[list[Any]] = []
    for v in values:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def encode_ints(values: Sequence[int]) -> list[Any]:
    """Integers with runs of three or more consecutive values as ``[first, last]`` (note references)."""
    names = [str(v) for v in values]
    return encode_ids(names, {str(v): v for v in values})


# ------------------------------------------------------------------------------------------------ per item
def gold_ranks(item: LoggedItem) -> list[dict[str, Any]]:
    """For each gold evidence turn of ``item``: where it stood in the evidence the answerer got — ``rank`` (1-based
    position of the first note holding it, among ``n_notes``) and ``tokens_before`` (context tokens of the notes
    ahead of it) — or, when no note held it, ``rank`` None and whether round 1 of iterative refinement had it
    (``in_round1``) or it was among the retrieved ids outside the notes (``in_retrieved``)."""
    notes = item.notes
    first: dict[str, tuple[int, int]] = {}
    before = 0
    for pos, note in enumerate(notes, start=1):
        for dia in note.get("dia_ids") or []:
            first.setdefault(str(dia), (pos, before))
        before += int(note.get("tokens") or 0)
    round1 = {str(d) for d in item.extra.get("round1_dia_ids") or []}
    retrieved = {str(d) for d in item.retrieved_dia_ids}
    out = []
    for dia in item.evidence:
        hit = first.get(str(dia))
        out.append(
            {
                "dia_id": str(dia),
                "rank": None if hit is None else hit[0],
                "tokens_before": None if hit is None else hit[1],
                "n_notes": len(notes),
                "in_round1": str(dia) in round1,
                "in_retrieved": str(dia) in retrieved,
            }
        )
    return out


def judge_score(item: LoggedItem) -> float | None:
    """The item's judge score (mean over judge runs, as aggregated), None when unjudged."""
    value = item.scores.get("judge")
    return None if value is None else float(value)


def _total_tokens(usage: Mapping[str, Any] | None) -> int | None:
    if not usage:
        return None
    return sum(int(st.get("prompt_tokens", 0)) + int(st.get("completion_tokens", 0)) for st in usage.values())


def _total_latency(latency: Mapping[str, Any] | None) -> float | None:
    if not latency:
        return None
    return round(sum(float(v) for v in latency.values() if isinstance(v, int | float)), 3)


def _r(value: Any, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def index_row(item: LoggedItem, question: str | None) -> list[Any]:
    """The item's row of the run index, in :data:`INDEX_COLUMNS` order."""
    scores = item.scores
    ranks = gold_ranks(item)
    ranked = [g["rank"] for g in ranks if g["rank"] is not None]
    return [
        item.item_id,
        item.get("conv_id"),
        item.category,
        item.question or question or "",
        item.gold,
        item.answer,
        _r(scores.get("f1")),
        _r(scores.get("bleu1")),
        _r(judge_score(item)),
        _r(item.recall),
        _r(item.hit),
        tokens_used(item),
        len(item.notes),
        item.get("rounds"),
        min(ranked) if ranked else None,
        sum(1 for g in ranks if g["rank"] is None),
        _total_tokens(item.usage),
        _total_latency(item.get("latency_s")),
    ]


class NoteTable:
    """The distinct notes of one conversation's items (note id, turn ids, tokens), each stored once."""

    def __init__(self, index: Mapping[str, int]) -> None:
        self.index = index
        self.rows: list[list[Any]] = []
        self._seen: dict[tuple[Any, ...], int] = {}

    def ref(self, note: Mapping[str, Any]) -> int:
        dia = tuple(str(d) for d in note.get("dia_ids") or [])
        key = (str(note.get("note_id")), dia, int(note.get("tokens") or 0))
        if key not in self._seen:
            self._seen[key] = len(self.rows)
            self.rows.append([key[0], encode_ids(dia, self.index), key[2]])
        return self._seen[key]


def item_detail(item: LoggedItem, notes: NoteTable) -> dict[str, Any]:
    """What the item page needs beyond the index row: its notes (as references into ``notes``, with their scores
    and channels as :func:`run_lengths`), retrieved ids when they are not just the notes' turns, gold ranks, IER rounds, judge verdicts,
    usage, latency, the raw reply and the audited scores."""
    its = item.notes
    refs = [notes.ref(n) for n in its]
    scores = [_r(n.get("score"), 6) for n in its]
    channels = ["+".join(n.get("channels") or []) for n in its]
    flat = [str(d) for n in its for d in n.get("dia_ids") or []]
    retrieved = [str(d) for d in item.retrieved_dia_ids]
    extra = item.extra
    if "round1_dia_ids" in extra:
        extra["round1_dia_ids"] = [str(d) for d in extra["round1_dia_ids"]]
    return {
        "n": encode_ints(refs),
        "ns": run_lengths(scores),
        "nc": run_lengths(channels),
        "rid": None if retrieved == flat else encode_ids(retrieved, notes.index),
        "ev": item.evidence,
        "granks": gold_ranks(item),
        "scores": item.scores,
        "extra": extra,
        "judge": item.judge,
        "usage": item.usage,
        "latency": item.get("latency_s"),
        "raw": item.get("answer_raw"),
        "prompt": item.get("prompt_version"),
        "prompt_hash": item.get("prompt_hash"),
        "cached": item.get("cached"),
        "audited": item.audited,
        "slim": "question" not in item,
    }


# ------------------------------------------------------------------------------------------------ conversations
def dataset_config(cfg: Any) -> Any:
    """The run's ``dataset`` block over its named dataset config (``configs/dataset/<name>.yaml`` with the configs
    its Hydra ``defaults`` list names): archives of older runs keep only the keys that were set."""
    block = cfg.get("dataset") or OmegaConf.create({})
    return OmegaConf.merge(_dataset_defaults(str(block.get("name")), depth=0), block)


def _dataset_defaults(name: str, depth: int) -> Any:
    """``configs/dataset/<name>.yaml`` with its ``defaults`` merged in (empty when there is no such file)."""
    path = CONFIG_DIR / "dataset" / f"{name}.yaml"
    if depth > 4 or not path.is_file():
        return OmegaConf.create({})
    own = OmegaConf.load(path)
    bases = [d for d in own.pop("defaults", []) if isinstance(d, str) and d != "_self_"]
    return OmegaConf.merge(*(_dataset_defaults(b, depth + 1) for b in bases), own)


def load_conversations(run: RunData) -> tuple[dict[str, Any], dict[str, str]]:
    """The run's LoCoMo slice, as the harness loads it from the run's ``config.yaml`` (``dataset``): per
    conversation its speakers, sessions and turns (only the sessions the slice holds), and every QA item's question
    (slim archives drop it from the items). Raises :class:`ViewInputError` when the data file cannot be found."""
    cfg_path = run.path / "config.yaml"
    if not cfg_path.is_file():
        raise ViewInputError(f"{run.path}: no config.yaml, so the conversation slice is unknown; re-archive the run.")
    try:
        data = load_slice(dataset_config(OmegaConf.load(cfg_path)))
    except (DataError, ConfigError) as exc:  # a missing file, or a config whose selection is empty
        raise ViewInputError(f"cannot load the run's LoCoMo slice: {exc}") from None
    convs: dict[str, Any] = {}
    questions: dict[str, str] = {}
    for conv in data.conversations:
        turns = []
        for s in conv.sessions:
            for t in s.turns:
                turns.append([t.dia_id, t.speaker, t.text, s.index, t.image_caption])
        convs[conv.conv_id] = {
            "id": conv.conv_id,
            "speakers": [conv.speaker_a, conv.speaker_b],
            "sessions": {str(s.index): s.time_raw for s in conv.sessions},
            "turns": turns,
        }
        for q in conv.qa:
            questions[q.item_id] = q.question
    return convs, questions


# ------------------------------------------------------------------------------------------------ overview
def run_overview(vr: ViewRun) -> dict[str, Any]:
    """The run's overview: its table per category (as ``memcore-run`` prints it), the report's detail table, the
    disclosure (method, backbone, protocol, slice, answer prompt, judge, evidence budget) and cost."""
    run = vr.run
    summary = summarize_run(run, n_boot=N_BOOT, seed=SEED, alpha=ALPHA)
    try:
        table = format_table(run.metrics, f"{vr.label} on {run.dataset}")
    except KeyError as exc:
        table = f"(metrics.json lacks {exc}; the per-category table cannot be drawn)"
    disclosure = {
        "method": run.method_label,
        "ablation": run.ablation,
        "switches": ", ".join(f"{k}={'on' if v else 'off'}" for k, v in run_switches(run).items()) or "–",
        "backbone": run.backbone,
        "embedder": run.embedder,
        "protocol": run.protocol,
        "slice": slice_line(run.dataset, run.info.get("slice") or {"n_items": run.metrics.get("n_items")}),
        "answered": "yes" if run.answered else "no (retrieval only)",
        "answer prompt": answer_cell(run),
        "judge": judge_cell(run),
        **published_disclosure(run.metrics),
        "evidence": evidence_cell(evidence_info(run)),
        "K": "–" if run_k(run) is None else str(run_k(run)),
        "experiment": run.experiment or "–",
    }
    cost = {k: v for k, v in cost_summary(run).items()}
    cost.update(usage_totals(run))
    return {
        "label": vr.label,
        "path": vr.path,
        "answered": run.answered,
        "judged": any(judge_score(r) is not None for r in run.items),
        "table": table,
        "detail": detail_table([summary]).to_markdown(),
        "disclosure": disclosure,
        "cost": cost,
        "n_items": len(run.items),
        "ier": run.metrics.get("ier_refinement"),
    }


def paired_category_deltas(a: ViewRun, b: ViewRun) -> list[dict[str, Any]]:
    """Per category (then overall and, when the dataset's headline leaves categories out, the headline overall) and
    per :data:`DELTA_METRICS` both runs carry: B minus A in
    percent points, paired per item, with the report's paired bootstrap interval (``paired_delta_ci``)."""
    declared = dataset_of(a.run.config.get("dataset") or {}).categories
    cats = sorted({r.category for r in a.items})
    groups: list[tuple[str, tuple[int, ...] | None]] = [(declared.get(c).heading, (c,)) for c in cats]
    headline = declared.headline_ids
    groups.append(("overall", None))
    if headline != declared.ids:  # a dataset whose headline is every category has one overall
        groups.append((f"overall {declared.span(headline)}", headline))
    metrics = [
        m
        for m in DELTA_METRICS
        if any(metric_value(r, m) is not None for r in a.items) and any(metric_value(r, m) is not None for r in b.items)
    ]
    rows = []
    for name, group in groups:
        row: dict[str, Any] = {"group": name}
        for m in metrics:
            ci = paired_delta_ci(b.items, a.items, m, n_boot=N_BOOT, seed=SEED, alpha=ALPHA, categories=group)
            row[m] = None if ci is None else [100.0 * ci[0], 100.0 * ci[1], 100.0 * ci[2], ci[3]]
        rows.append(row)
    return rows


def two_run_tables(a: ViewRun, b: ViewRun) -> str:
    """The report's detail table with both runs side by side (Markdown)."""
    return detail_table([summarize_run(r.run, n_boot=N_BOOT, seed=SEED, alpha=ALPHA) for r in (a, b)]).to_markdown()


# ------------------------------------------------------------------------------------------------ everything
@dataclass
class SiteData:
    """Everything the site's data files hold. ``details[i][conv]`` is run i's chunk for one conversation."""

    runs: list[dict[str, Any]]
    convs: dict[str, Any]
    details: list[dict[str, dict[str, Any]]]
    diff: dict[str, Any] | None


def build_site_data(runs: Sequence[ViewRun]) -> SiteData:
    """The site's data for one run or two (two must share a slice: :func:`check_same_slice`)."""
    if len(runs) == 2:
        check_same_slice(runs[0], runs[1])
    convs, questions = load_conversations(runs[0].run)
    out_runs, details = [], []
    for vr in runs:
        per_conv: dict[str, dict[str, Any]] = {}
        tables: dict[str, NoteTable] = {}
        rows = []
        for item in vr.items:
            conv_id = str(item.get("conv_id"))
            conv = convs.get(conv_id)
            if conv_id not in tables:
                tables[conv_id] = NoteTable({t[0]: i for i, t in enumerate(conv["turns"])} if conv else {})
                per_conv[conv_id] = {"notes": tables[conv_id].rows, "items": {}}
            per_conv[conv_id]["items"][item.item_id] = item_detail(item, tables[conv_id])
            rows.append(index_row(item, questions.get(item.item_id)))
        out_runs.append({**run_overview(vr), "cols": list(INDEX_COLUMNS), "rows": rows})
        details.append(per_conv)
    diff = None
    if len(runs) == 2:
        diff = {"deltas": paired_category_deltas(runs[0], runs[1]), "detail": two_run_tables(runs[0], runs[1])}
    return SiteData(out_runs, convs, details, diff)
