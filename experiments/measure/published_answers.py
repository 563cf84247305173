"""Published answers of real systems scored as runs: the table of every imported system, the rank agreement of the
vendors' J and the harness's F1, what explains their disagreement, and a figure of answer length against both.

    python -m experiments.measure.published_answers build --root <root> --out results/measured/published_answers
    python -m experiments.measure.published_answers tables --out results/measured/published_answers

``build`` imports every known published file (``memcore.published.sources``; from ``$MEMCORE_PUBLISHED`` or
``../shared/data/published``) under both protocols into ``<root>/runs/published/<name>/<protocol>`` (the full runs,
with the vendors' answers: never committed), archives each slim under ``--out``/runs without the vendors' answer and
question texts (their licences), keeping per item its ids, scores, the vendor's grade, the answer's length in words
and the share of the gold's tokens the answer contains; then ``tables``. ``tables`` reads only the committed runs and
writes ``tables.md``, ``summary.json`` and ``length_vs_scores.png``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memcore.datasets.locomo.scoring import amem_tokens
from memcore.eval.bootstrap import bootstrap_ci
from memcore.itemlog import ITEMS_GZ, LoggedItem, read_run_items
from memcore.published.importer import ImportRequest, import_published
from memcore.published.paths import published_dir
from memcore.published.sources import SOURCES
from memcore.report.archive import archive_run
from memcore.report.reference import default_reference_dir, load_paper_numbers

#: The systems in the table, in order: (source name, row label). The last is a partial run (no conversation 0),
#: shown but left out of the rank statistics.
SYSTEMS: tuple[tuple[str, str], ...] = (
    ("zep", "Zep (gpt-4o-mini)"),
    ("memobase-0710", "Memobase 0710 (v0.0.37)"),
    ("memobase-0503", "Memobase 0503 (v0.0.32)"),
    ("mem0-pr3509", "Mem0 OSS, PR 3509 (Qwen3-14B)"),
    ("backboard", "Backboard (gemini-2.5-pro)"),
    ("full-context-gpt-4o-mini-cot", "Full context, gpt-4o-mini, CoT"),
    ("full-context-gpt-4o-mini-memos", "Full context, gpt-4o-mini, MemOS prompt"),
    ("full-context-gpt-4.1-mini-cot", "Full context, gpt-4.1-mini, CoT"),
    ("full-context-gpt-4.1-mini-memos", "Full context, gpt-4.1-mini, MemOS prompt"),
    ("memobase-0709", "Memobase 0709 (partial: 9 conversations)"),
)
PARTIAL = {"memobase-0709"}
PROTOCOLS = ("amem", "locomo")
CATS = (1, 2, 3, 4)
N_BOOT, SEED = 1000, 0
#: Item fields a committed slim item keeps (the vendors' answer and question texts are dropped).
KEEP = ("item_id", "conv_id", "qa_index", "category", "category_name", "gold", "evidence", "retrieved_dia_ids")
KEEP += ("recall", "hit", "scores", "prompt_version", "record_version", "notes", "tokens_used", "rounds")
KEEP += ("context_tokens",)  # tokens_used in items written before the rename


# ------------------------------------------------------------------------------------------------ build
def gold_token_recall(answer: str, gold: str) -> float:
    """The share of the gold's A-MEM tokens (a set, as A-MEM's F1 uses them) that the answer contains: how much of
    the gold a long answer carries, whatever else it says."""
    ref = set(amem_tokens(gold))
    return len(ref & set(amem_tokens(answer))) / len(ref) if ref else 0.0


def slim_published(item: dict[str, Any]) -> dict[str, Any]:
    """A committed item: ids, gold, scores (original and audited), the vendor's grade and judgements, the answer's
    length in words and its gold-token recall; never the vendor's answer or question text."""
    out = {k: item[k] for k in KEEP if k in item}
    answer = str(item.get("answer") or "")
    out["answer_words"] = len(answer.split())
    out["gold_token_recall"] = gold_token_recall(answer, str(item.get("gold") or ""))
    if isinstance(item.get("audited"), dict):
        out["audited"] = item["audited"]
    pub = dict((item.get("extra") or {}).get("published") or {})
    out["extra"] = {
        "published": {k: pub[k] for k in ("grade", "judgements", "question_differs", "vendor_scores") if k in pub}
    }
    return out


def build(root: Path, out: Path, published: Path | None) -> None:

    data = published_dir(published)
    for name, _ in SYSTEMS:
        src = SOURCES.get(name)
        for protocol in PROTOCOLS:
            run = root / "runs" / "published" / name / protocol
            req = ImportRequest(
                paths=tuple(data / f.local for f in src.files),
                layout=src.layout,
                system=src.system,
                out=run,
                protocol=protocol,
                overwrite=True,
            )
            import_published(req, say=print)
            dest = archive_run(run, out / "runs" / name / protocol, roots=[root], slim=True)
            items = [slim_published(r) for r in read_run_items(run)]
            text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in items)
            with open(dest / ITEMS_GZ, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
                gz.write(text.encode("utf-8"))
            print(f"{name} / {protocol}: {len(items)} items -> {dest}")


# ------------------------------------------------------------------------------------------------ tables
def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _grade(item: dict[str, Any]) -> float | None:
    g = ((item.get("extra") or {}).get("published") or {}).get("grade")
    return None if g is None else float(g)


def system_values(runs: Path, name: str) -> dict[str, Any]:
    """One system's numbers (percent) from its committed runs under both protocols."""
    amem = read_run_items(runs / name / "amem")
    locomo = read_run_items(runs / name / "locomo")
    metrics = json.loads((runs / name / "amem" / "metrics.json").read_text())
    pub = metrics["run"]["published"]
    items = [r for r in amem if int(r["category"]) in CATS]
    out: dict[str, Any] = {
        "name": name,
        "system": pub["system"],
        "answer_model": pub["answer_model"],
        "vendor_judge": pub["judge"],
        "source": pub["source"],
        "n": len(items),
        "question_mismatches": pub["question_mismatches"],
    }
    grades = [g for r in items if (g := _grade(r)) is not None]
    out["j_published"] = 100 * statistics.fmean(grades)
    judged = [LoggedItem(r, scores={"judge": _grade(r)}) for r in items]
    out["j_published_ci"] = [100 * v for v in bootstrap_ci(judged, "judge", n_boot=N_BOOT, seed=SEED)]
    for proto, its in (("amem", amem), ("locomo", locomo)):
        its = [r for r in its if int(r["category"]) in CATS]
        out[f"f1_{proto}"] = 100 * statistics.fmean(r["scores"]["f1"] for r in its)
        out[f"f1_{proto}_ci"] = [100 * v for v in bootstrap_ci(its, "f1", n_boot=N_BOOT, seed=SEED)]
        out[f"bleu1_{proto}"] = 100 * statistics.fmean(r["scores"]["bleu1"] for r in its)
        for c in CATS:
            out[f"f1_{proto}_cat{c}"] = 100 * statistics.fmean(
                r["scores"]["f1"] for r in its if int(r["category"]) == c
            )
    for c in CATS:
        out[f"j_published_cat{c}"] = 100 * statistics.fmean(
            g for r in items if int(r["category"]) == c and (g := _grade(r)) is not None
        )
    out["f1_amem_audited"] = 100 * statistics.fmean((r.get("audited") or r)["scores"]["f1"] for r in items)
    words = [int(r["answer_words"]) for r in items]
    out["words_mean"], out["words_median"] = statistics.fmean(words), float(statistics.median(words))
    out["gold_token_recall"] = 100 * statistics.fmean(float(r["gold_token_recall"]) for r in items)
    correct = [r for r in items if (_grade(r) or 0.0) >= 0.5]
    out["f1_when_vendor_correct"] = 100 * statistics.fmean(r["scores"]["f1"] for r in correct)
    out["low_f1_share_when_vendor_correct"] = 100 * sum(r["scores"]["f1"] < 0.2 for r in correct) / len(correct)
    return out


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two rankings (scipy's)."""
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic)


def tau_interval(runs: Path, names: Sequence[str], a: str, b: str) -> tuple[float, float, float]:
    """Kendall's tau between systems' ``a`` and ``b`` (``j``: vendor J, ``f1_amem``, ``f1_locomo``, ``words``: mean
    answer words) over categories 1-4, and its 95 % interval from resampling conversations (the same draw for every
    system: they answer the same items)."""

    def per_conv(name: str) -> dict[str, np.ndarray]:
        amem = [r for r in read_run_items(runs / name / "amem") if int(r["category"]) in CATS]
        locomo = {r["item_id"]: r for r in read_run_items(runs / name / "locomo")}
        convs = sorted({r["conv_id"] for r in amem})
        sums = {k: np.zeros(len(convs)) for k in ("j", "f1_amem", "f1_locomo", "words", "n")}
        for r in amem:
            i = convs.index(r["conv_id"])
            sums["j"][i] += _grade(r) or 0.0
            sums["f1_amem"][i] += r["scores"]["f1"]
            sums["f1_locomo"][i] += locomo[r["item_id"]]["scores"]["f1"]
            sums["words"][i] += r["answer_words"]
            sums["n"][i] += 1
        return sums

    sums = [per_conv(n) for n in names]
    point = kendall_tau([s[a].sum() / s["n"].sum() for s in sums], [s[b].sum() / s["n"].sum() for s in sums])
    draws = np.random.default_rng(SEED).integers(0, len(sums[0]["n"]), size=(N_BOOT, len(sums[0]["n"])))
    taus = []
    for d in draws:
        xa = [s[a][d].sum() / s["n"][d].sum() for s in sums]
        xb = [s[b][d].sum() / s["n"][d].sum() for s in sums]
        taus.append(kendall_tau(xa, xb))
    low, high = np.nanpercentile(taus, [2.5, 97.5])
    return point, float(low), float(high)


def _f(v: float | None, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _ci(v: float, ci: Sequence[float]) -> str:
    return f"{v:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def tables(runs: Path) -> tuple[str, dict[str, Any]]:
    rows = [system_values(runs, name) | {"label": label} for name, label in SYSTEMS]
    full = [r for r in rows if r["name"] not in PARTIAL]
    lines = ["## Every imported system, categories 1-4 (A-MEM protocol unless named)", ""]
    lines += [
        "| system | answer model | vendor's judge | n | J as published [95% CI] | F1 [95% CI] | BLEU-1 | F1 (LoCoMo protocol) [95% CI] | BLEU-1 (LoCoMo protocol) | F1, audited gold | words mean / median | gold-token recall |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {r['answer_model']} | {r['vendor_judge']} | {r['n']} | {_ci(r['j_published'], r['j_published_ci'])} "
            f"| {_ci(r['f1_amem'], r['f1_amem_ci'])} | {_f(r['bleu1_amem'])} | {_ci(r['f1_locomo'], r['f1_locomo_ci'])} "
            f"| {_f(r['bleu1_locomo'])} | {_f(r['f1_amem_audited'])} | {_f(r['words_mean'], 1)} / {_f(r['words_median'], 0)} "
            f"| {_f(r['gold_token_recall'], 1)} |"
        )
    lines += [
        "",
        "## Per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop): J as published / F1 (A-MEM) / F1 (LoCoMo)",
        "",
    ]
    lines += ["| system | " + " | ".join(f"cat. {c}" for c in CATS) + " |", "|---|" + "---:|" * len(CATS)]
    for r in rows:
        cells = [
            f"{r[f'j_published_cat{c}']:.2f} / {r[f'f1_amem_cat{c}']:.2f} / {r[f'f1_locomo_cat{c}']:.2f}" for c in CATS
        ]
        lines.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    names = [r["name"] for r in full]
    pairs = [("j", "f1_amem"), ("j", "f1_locomo"), ("words", "f1_amem"), ("words", "j")]
    label = {"j": "J as published", "f1_amem": "F1 (A-MEM)", "f1_locomo": "F1 (LoCoMo)", "words": "mean answer words"}
    taus = {f"{a}~{b}": tau_interval(runs, names, a, b) for a, b in pairs}
    lines += [
        "",
        f"## Rank agreement across the {len(full)} complete systems (Kendall's tau-b, 95% CI from {N_BOOT} resamples of conversations)",
        "",
    ]
    lines += ["| between | tau | 95% CI |", "|---|---:|---:|"]
    for (a, b), key in zip(pairs, taus, strict=True):
        t, lo, hi = taus[key]
        lines.append(f"| {label[a]} and {label[b]} | {t:+.3f} | [{lo:+.3f}, {hi:+.3f}] |")
    lines += ["", "## Where a vendor's judge said correct: the F1 of those answers", ""]
    lines += [
        "| system | median words | F1 of judged-correct answers | judged correct with F1 < 0.2 (%) | gold-token recall |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['label']} | {_f(r['words_median'], 0)} | {_f(r['f1_when_vendor_correct'])} "
            f"| {_f(r['low_f1_share_when_vendor_correct'], 1)} | {_f(r['gold_token_recall'], 1)} |"
        )
    lines += ["", "## The same full-context model under two answer prompts", ""]
    lines += [
        "| model | prompt | J as published | F1 (A-MEM) | F1 (LoCoMo) | median words |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["name"].startswith("full-context"):
            model, prompt = r["name"].removeprefix("full-context-").rsplit("-", 1)
            lines.append(
                f"| {model} | {prompt} | {_f(r['j_published'])} | {_f(r['f1_amem'])} | {_f(r['f1_locomo'])} | {_f(r['words_median'], 0)} |"
            )
    paper = load_paper_numbers(default_reference_dir()).main_row("gpt-4o-mini", "full_context")
    if paper is not None:
        lines += [
            "",
            "## Beside the paper's table (results/reference/, full context on gpt-4o-mini, A-MEM protocol F1)",
            "",
        ]
        lines += ["| row | " + " | ".join(f"cat. {c}" for c in CATS) + " |", "|---|" + "---:|" * len(CATS)]
        lines.append(
            "| paper: LoCoMo full-context baseline, gpt-4o-mini | "
            + " | ".join(_f(paper.get(f"cat{c}")) for c in CATS)
            + " |"
        )
        for r in rows:
            if r["name"].startswith("full-context-gpt-4o-mini"):
                lines.append(f"| ours: {r['label']} | " + " | ".join(_f(r[f"f1_amem_cat{c}"]) for c in CATS) + " |")
    summary = {
        "systems": rows,
        "kendall_tau": {k: list(v) for k, v in taus.items()},
        "paper_full_context_gpt_4o_mini": paper,
    }
    return "\n".join(lines) + "\n", summary


def figure(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Median answer words (log scale) against F1 and against J as published, one point per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharex=True)
    for ax, key, title in (
        (axes[0], "f1_amem", "token F1 (A-MEM protocol), cat. 1-4"),
        (axes[1], "j_published", "J as published (each vendor's judge), cat. 1-4"),
    ):
        for r in rows:
            marker = "x" if r["name"] in PARTIAL else "o"
            ax.scatter(r["words_median"], r[key], marker=marker)
            ax.annotate(r["label"], (r["words_median"], r[key]), fontsize=7, xytext=(4, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xticks([3, 5, 10, 20, 40], labels=["3", "5", "10", "20", "40"])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("median answer length (words, log scale)")
        ax.set_ylabel("%")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    fig.suptitle("Published LoCoMo answers: answer length against F1 and against the vendors' J", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


def write_tables(out: Path) -> None:
    text, summary = tables(out / "runs")
    (out / "tables.md").write_text(text)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    figure(summary["systems"], out / "length_vs_scores.png")
    print(text)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="import every published file, archive slim, write the tables")
    b.add_argument("--root", type=Path, required=True, help="a scratch results root for the full runs")
    b.add_argument("--published", type=Path, default=None, help="the published data dir (default: the search)")
    b.add_argument("--out", type=Path, default=Path("results/measured/published_answers"))
    t = sub.add_parser("tables", help="the tables, summary and figure from the committed runs")
    t.add_argument("--out", type=Path, default=Path("results/measured/published_answers"))
    args = p.parse_args(argv)
    if args.cmd == "build":
        build(args.root, args.out, args.published)
    write_tables(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
