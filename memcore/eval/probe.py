"""Judge leniency probe: grade answers whose verdict is known, built from LoCoMo itself, and report the
judge's false-accept and false-reject rates with their n.

Known-wrong answers (a judge that accepts them is lenient):

- ``other_gold``: another item's gold answer from the same conversation and category, sharing no token
  with this item's gold;
- ``date_shift``: the gold with its date moved by one unit (a day for "7 May 2023", a month for
  "May 2023", a year for "2022");
- ``vague``: an on-topic answer that states no fact ("It had something to do with <the question's topic>.").

Known-right answers (a judge that rejects them is strict):

- ``date_format``: the gold with its day-level date written another way ("7 May 2023" -> "May 7, 2023",
  "2023-05-07", "7th May 2023");
- ``added_detail``: the gold followed by what the evidence turn said ("<gold> (<speaker> said: "...")");
- ``case``: the gold lower-cased (upper-cased when it has no capitals);
- ``punctuation``: the gold without commas and semicolons, ending in a full stop (quoted when that
  changes nothing).

Cases come from categories 1-4 of the full file, drawn with a seeded RNG, the same for every preset, so
presets are compared on identical cases. Each case is one judge call (run index 0, cached).

``memcore-judge-probe --preset judge-v1 --preset mem0-judge --backbone local`` (:mod:`memcore.commands.judge_probe`)
writes ``results/measured/judge_probe.{json,md}``; results of other (preset, model) pairs already in the json
are kept, so the file accumulates. ``memcore-report`` prints the table beside J when the file exists.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

WRONG_KINDS: tuple[str, ...] = ("other_gold", "date_shift", "vague")
RIGHT_KINDS: tuple[str, ...] = ("date_format", "added_detail", "case", "punctuation")
DEFAULT_OUT = Path("results/measured/judge_probe")
#: The dataset whose gold answers the probe's cases are made from.
PROBE_DATASET = "locomo"

_MONTHS: tuple[str, ...] = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_RE = "|".join(_MONTHS)
_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? ({_MONTH_RE}),? (\d{{4}})\b", re.IGNORECASE)
_MDY = re.compile(rf"\b({_MONTH_RE}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.IGNORECASE)
_MY = re.compile(rf"\b({_MONTH_RE}),? (\d{{4}})\b", re.IGNORECASE)
_Y = re.compile(r"\b(19\d{2}|20\d{2})\b")
_AUX = r"is|are|was|were|did|does|do|has|have|had|can|could|would|will|might|should"
_WH = re.compile(
    r"^(?:(?:what|which|who|whom|whose|where|when|why|how(?: many| much| long| often)?)"
    rf"(?: (?:{_AUX}|kind of|type of))?|(?:{_AUX}))\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ProbeCase:
    """One graded answer with a known verdict (``expected`` CORRECT or WRONG)."""

    item_id: str
    category: int
    question: str
    gold: str
    answer: str
    kind: str
    expected: str


def _month_index(name: str) -> int:
    return [m.lower() for m in _MONTHS].index(name.lower()) + 1


def _fmt_day(d: dt.date, style: str) -> str:
    month = _MONTHS[d.month - 1]
    if style == "mdy":
        return f"{month} {d.day}, {d.year}"
    if style == "iso":
        return d.isoformat()
    if style == "ordinal":
        suffix = "th" if 11 <= d.day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d.day % 10, "th")
        return f"{d.day}{suffix} {month} {d.year}"
    return f"{d.day} {month} {d.year}"


def _find_day(text: str) -> tuple[re.Match[str], dt.date, str] | None:
    """The first day-level date in ``text``: (match, date, "dmy"|"mdy")."""
    for pattern, style in ((_DMY, "dmy"), (_MDY, "mdy")):
        m = pattern.search(text)
        if m:
            if style == "dmy":
                day, month, year = int(m.group(1)), _month_index(m.group(2)), int(m.group(3))
            else:
                day, month, year = int(m.group(2)), _month_index(m.group(1)), int(m.group(3))
            with contextlib.suppress(ValueError):
                return m, dt.date(year, month, day), style
    return None


def shift_date(text: str, step: int) -> str | None:
    """``text`` with its first date moved by ``step`` (+1/-1) of its finest unit (day, month, year); None
    when it has no date."""
    found = _find_day(text)
    if found:
        m, d, style = found
        return text[: m.start()] + _fmt_day(d + dt.timedelta(days=step), style) + text[m.end() :]
    m2 = _MY.search(text)
    if m2:
        month, year = _month_index(m2.group(1)) - 1 + step, int(m2.group(2))
        year, month = year + month // 12, month % 12
        return text[: m2.start()] + f"{_MONTHS[month]} {year}" + text[m2.end() :]
    m3 = _Y.search(text)
    if m3:
        return text[: m3.start()] + str(int(m3.group(1)) + step) + text[m3.end() :]
    return None


def reformat_date(text: str, rng: random.Random) -> str | None:
    """``text`` with its first day-level date written in another format; None without one."""
    found = _find_day(text)
    if not found:
        return None
    m, d, style = found
    styles = [s for s in ("mdy", "iso", "ordinal", "dmy") if s != style]
    return text[: m.start()] + _fmt_day(d, rng.choice(styles)) + text[m.end() :]


def vague_answer(question: str) -> str:
    """An on-topic answer stating no fact, from the question's own words."""
    topic = _WH.sub("", question.strip().rstrip("?").strip()).strip()
    if question.strip().lower().startswith("when"):
        return f"At some point, when {topic}."
    return f"It had something to do with {topic}."


def _tokens(text: str) -> set[str]:
    return set(re.sub(r"[.,!?;:'\"()]", " ", text.lower()).split())


def _words(text: str, n: int) -> str:
    parts = text.split()
    return " ".join(parts[:n]) + (" ..." if len(parts) > n else "")


def build_cases(dataset: Any, *, n_wrong: int, n_right: int, seed: int = 0) -> list[ProbeCase]:
    """Known-wrong and known-right answers from ``dataset`` (a :class:`~memcore.datasets.spec.DatasetFile`),
    ``n_wrong`` / ``n_right`` split as evenly as the data allows over the kinds; deterministic in ``seed``."""
    rng = random.Random(seed)
    items = [(conv, q) for conv in dataset.conversations for q in conv.qa if int(q.category) in (1, 2, 3, 4)]
    items = [(c, q) for c, q in items if q.answer and q.answer.strip()]
    rng.shuffle(items)
    by_group: dict[tuple[str, int], list[Any]] = {}
    for conv, q in items:
        by_group.setdefault((conv.conv_id, int(q.category)), []).append(q)
    candidates: dict[str, list[ProbeCase]] = {k: [] for k in (*WRONG_KINDS, *RIGHT_KINDS)}

    def case(q: Any, answer: str, kind: str, expected: str) -> ProbeCase:
        return ProbeCase(q.item_id, int(q.category), q.question, q.answer, answer, kind, expected)

    for conv, q in items:
        gold = q.answer.strip()
        others = [o for o in by_group[(conv.conv_id, int(q.category))] if o.item_id != q.item_id and o.answer]
        other = next((o for o in others if not (_tokens(o.answer) & _tokens(gold))), None)
        if other is not None:
            candidates["other_gold"].append(case(q, other.answer.strip(), "other_gold", "WRONG"))
        shifted = shift_date(gold, rng.choice((1, -1)))
        if shifted is not None and shifted != gold:
            candidates["date_shift"].append(case(q, shifted, "date_shift", "WRONG"))
        candidates["vague"].append(case(q, vague_answer(q.question), "vague", "WRONG"))
        reformatted = reformat_date(gold, rng)
        if reformatted is not None and reformatted != gold:
            candidates["date_format"].append(case(q, reformatted, "date_format", "CORRECT"))
        turns = {t.dia_id: t for t in conv.turns}
        ev = next((turns[e] for e in q.evidence if e in turns), None)
        if ev is not None:
            detail = f'{gold} ({ev.speaker} said: "{_words(ev.text, 25)}")'
            candidates["added_detail"].append(case(q, detail, "added_detail", "CORRECT"))
        cased = gold.lower() if gold.lower() != gold else gold.upper()
        if cased != gold:
            candidates["case"].append(case(q, cased, "case", "CORRECT"))
        punct = re.sub(r"\s*[,;]\s*", " ", gold).rstrip(".!? ") + "."
        candidates["punctuation"].append(case(q, punct if punct != gold else f'"{gold}"', "punctuation", "CORRECT"))

    def take(kinds: Sequence[str], total: int) -> list[ProbeCase]:
        out: list[ProbeCase] = []
        used: dict[str, int] = dict.fromkeys(kinds, 0)
        while len(out) < total and any(used[k] < len(candidates[k]) for k in kinds):
            for k in kinds:
                if len(out) < total and used[k] < len(candidates[k]):
                    out.append(candidates[k][used[k]])
                    used[k] += 1
        return out

    return take(WRONG_KINDS, n_wrong) + take(RIGHT_KINDS, n_right)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """95% Wilson score interval of k/n (None for n = 0)."""
    if n == 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _rate(k: int, n: int) -> dict[str, Any]:
    ci = wilson(k, n)
    return {"k": k, "n": n, "rate": None if n == 0 else k / n, "ci95": None if ci is None else list(ci)}


def summarize_probe(cases: Sequence[ProbeCase], labels: Sequence[str]) -> dict[str, Any]:
    """False-accept (WRONG cases labelled CORRECT) and false-reject (CORRECT cases labelled WRONG) rates,
    overall and by kind, each with k, n and a 95% Wilson interval."""
    out: dict[str, Any] = {"false_accept": {}, "false_reject": {}}
    for expected, key in (("WRONG", "false_accept"), ("CORRECT", "false_reject")):
        pairs = [(c, lab) for c, lab in zip(cases, labels, strict=True) if c.expected == expected]
        bad = [(c, lab) for c, lab in pairs if lab != expected]
        out[key]["all"] = _rate(len(bad), len(pairs))
        for kind in WRONG_KINDS if expected == "WRONG" else RIGHT_KINDS:
            n = sum(1 for c, _ in pairs if c.kind == kind)
            k = sum(1 for c, _ in bad if c.kind == kind)
            if n:
                out[key][kind] = _rate(k, n)
    return out


def run_probe(judge: Any, cases: Sequence[ProbeCase]) -> tuple[list[str], int]:
    """Grade every case with ``judge`` (a :class:`~memcore.eval.judge.Judge`, run index 0); returns the
    labels and how many replies never parsed (counted fallbacks)."""
    labels: list[str] = []
    unparsed = 0
    for i, c in enumerate(cases, 1):
        v = judge.judge(c.question, c.gold, c.answer, run=0)
        labels.append(v.label)
        unparsed += int(not v.parsed)
        if i % 20 == 0:
            log.info("probe %s: %d/%d cases graded", judge.protocol.name, i, len(cases))
    return labels, unparsed


# ------------------------------------------------------------------------------------ output
def _pct(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("rate") is None:
        return "–"
    ci = r.get("ci95")
    span = f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]" if ci else ""
    return f"{100 * r['rate']:.1f}{span} ({r['k']}/{r['n']})"


def probe_table(results: Sequence[Mapping[str, Any]]) -> str:
    """Markdown: one row per (judge preset, model), false-accept and false-reject rates overall and by kind."""
    cols = ["Judge preset", "Model", "False accept %", *WRONG_KINDS, "False reject %", *RIGHT_KINDS, "unparsed"]
    lines = ["| " + " | ".join(cols) + " |", "|---|---|" + "---:|" * (len(cols) - 2)]
    for r in results:
        fa, fr = r["rates"]["false_accept"], r["rates"]["false_reject"]
        cells = [r["judge_preset"], f"{r['model']} ({r['backbone']})", _pct(fa.get("all"))]
        cells += [_pct(fa.get(k)) for k in WRONG_KINDS]
        cells += [_pct(fr.get("all"))] + [_pct(fr.get(k)) for k in RIGHT_KINDS]
        cells.append(str(r.get("unparsed", 0)))
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "False accept: known-wrong answers labelled CORRECT (other_gold: another item's gold, same conversation"
        " and category; date_shift: the gold's date moved by one unit; vague: on-topic, no fact). False reject:"
        " known-right answers labelled WRONG (the gold re-formatted: date_format, added_detail, case,"
        " punctuation). Rate % [95% Wilson interval] (k/n); cases from LoCoMo categories 1-4, the same for every"
        " preset.",
    ]
    return "\n".join(lines) + "\n"


def load_probe(path: Path) -> list[dict[str, Any]]:
    """The results in a probe json (``[]`` when the file is absent)."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    return list(data.get("results", [])) if isinstance(data, dict) else []


def save_probe(out: Path, new: Sequence[Mapping[str, Any]], command: str) -> None:
    """Merge ``new`` into ``<out>.json`` (replacing the same (preset, model, seed, n) entries) and rewrite
    ``<out>.md``."""
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    json_path.parent.mkdir(parents=True, exist_ok=True)

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return (r["judge_preset"], r["model"], r["seed"], r["n_cases"])

    merged = {key(r): dict(r) for r in load_probe(json_path)}
    for r in new:
        merged[key(r)] = {"command": command, **r}
    results = sorted(merged.values(), key=lambda r: (r["model"], r["judge_preset"]))
    json_path.write_text(json.dumps({"results": results}, indent=2, sort_keys=True) + "\n")
    commands = sorted({str(r["command"]) for r in results if r.get("command")})
    md = ["# Judge leniency probe", "", probe_table(results), "Commands:", ""]
    md += [f"    {c}" for c in commands]
    md_path.write_text("\n".join(md) + "\n")
