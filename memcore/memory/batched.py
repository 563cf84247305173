"""``memcore-batched``: MemCoRe with LightMem-style batched construction. NOT the paper's method.

The per-turn model spends about two LLM calls per turn (one ingestion call, one gate call) plus merges and
neighbour updates. Here a chunk of ``ingest_batch_size`` consecutive turns costs two calls in all:

- one ingestion call writes every turn's note (context + keywords), the turns seeing each other as context;
- one gate call judges every new note of the chunk against its embedding-nearest candidates, drawn from the
  memory before the chunk *and* the chunk's earlier notes (so consecutive redundant turns can still merge).

The judgements are then applied turn by turn in order through the unchanged Merge / Link / Append rule; a
candidate that is an earlier note of the chunk resolves to whichever note holds that turn by then. Merge
re-synthesis and strong-link neighbour updates remain one call per event. What batching gives up: a note is
judged against candidate contexts as they were before the chunk, and a turn's ingestion prompt shares the
chunk with others. Cheap mode (no LLM) is unaffected; ``ingest_batch_size: 1`` equals ``memcore``.

Long replies are where a small model fails: a reply cut at max_tokens is not retried (it would be cut again)
but keeps its complete entries; turns left without a note are asked again, and a chunk with no usable reply is
split in halves down to the per-turn call (``BatchIngestor``). Each of these is counted under
``construction.fallbacks`` (``ingest_batch:*``, ``gate_batch:*``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.cache import stable_hash
from memcore.llm.json_reply import complete_json
from memcore.memory.config import ConfigError, MemCoReConfig, Switches
from memcore.memory.construction import Constructor, Judgement, parse_relation
from memcore.memory.ingestion import Ingestor, IngestResult, clean_text, drop_filler
from memcore.memory.keywords import normalise_keywords
from memcore.memory.notes import EDGE_TYPES, Note, RawTurn
from memcore.memory.prompts import batch as BATCH_PROMPT
from memcore.memory.system import INGEST_BATCH, SPEC, MemCoRe
from memcore.schema import bad_value, check_fields, knob, rules_of
from memcore.types import Turn

BATCH_KEYS = ("ingest_batch_size", "batch_format_version")
#: Cap on a batched reply's max_tokens (the local backbone's context is 8k tokens).
MAX_BATCH_TOKENS = 4096

Ref = tuple[str, int]  # ("E", existing note id) | ("N", index of an earlier note in the chunk)


@dataclass(frozen=True)
class BatchSettings:
    ingest_batch_size: int = knob(8, build=True)
    # Bumped when code changes what batched construction builds (snapshot key); per-turn MemCoRe snapshots keep
    # theirs. 2: cut replies keep their complete entries, missing turns are re-asked, failed chunks are split.
    batch_format_version: int = knob(2, build=True)

    def __post_init__(self) -> None:
        for key in BATCH_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"method.{key} must be an integer, got {value!r}")
        if self.ingest_batch_size < 1:
            raise ConfigError(f"method.ingest_batch_size must be >= 1, got {self.ingest_batch_size}")


def split_config(raw: dict[str, Any]) -> tuple[MemCoReConfig, BatchSettings]:
    """The MemCoRe config and the batching knobs of a ``memcore-batched`` method config dict."""
    rest = {k: v for k, v in raw.items() if k not in BATCH_KEYS}
    batch = BatchSettings(**{k: raw[k] for k in BATCH_KEYS if k in raw})
    return MemCoReConfig.from_dict(rest), batch


# ---------------------------------------------------------------------- ingestion
def _validate_notes(ids: Sequence[str]) -> Callable[[Any], list[tuple[str, list[str]] | None]]:
    """Reply → per turn (in ``ids`` order) its (context, keywords), or None where the reply has no entry."""

    def validate(obj: Any) -> list[tuple[str, list[str]] | None]:
        if not isinstance(obj, dict) or not isinstance(obj.get("notes"), list):
            raise ValueError("batch ingest reply has no 'notes' list")
        by_id: dict[str, tuple[str, list[str]]] = {}
        for pos, item in enumerate(obj["notes"]):
            if not isinstance(item, dict):
                continue
            context = item.get("context")
            if not isinstance(context, str) or not context.strip():
                continue
            kws = item.get("keywords", [])
            if isinstance(kws, str):
                kws = [k for k in re.split(r"[;,]", kws) if k.strip()]
            if not isinstance(kws, list):
                kws = []
            key = str(item.get("id", "")).strip().strip("[]")
            if key not in ids and pos < len(ids):
                key = ids[pos]  # a model that garbles ids but keeps the order
            by_id.setdefault(key, (context.strip(), [k for k in kws if isinstance(k, str)]))
        out = [by_id.get(i) for i in ids]
        if all(v is None for v in out):
            raise ValueError("batch ingest reply matched none of the turns")
        return out

    return validate


def salvage_list_items(raw: str) -> list[Any]:
    """The complete JSON values of the first list in ``raw``, which may be cut off mid-list (a reply that ran
    to max_tokens): ``'{"notes": [{"a": 1}, {"b": 2}, {"c":'`` → ``[{"a": 1}, {"b": 2}]``."""
    start = raw.find("[")
    if start < 0:
        return []
    decoder, items, pos = json.JSONDecoder(), [], start + 1
    while True:
        pos = _SEPARATORS.match(raw, pos).end()  # type: ignore[union-attr]
        if pos >= len(raw) or raw[pos] == "]":
            return items
        try:
            item, pos = decoder.raw_decode(raw, pos)
        except json.JSONDecodeError:
            return items
        items.append(item)


_SEPARATORS = re.compile(r"[\s,]*")


class BatchIngestor:
    """One LLM call writes the notes of a chunk of turns; per-turn behaviour otherwise as ``Ingestor``.

    A reply that leaves turns out (or runs to max_tokens: its complete entries are kept) is followed by one
    call for the missing turns (``ingest_batch:reask``); a chunk whose reply has no usable entry is split in
    halves (``ingest_batch:split``), down to single turns, which take the per-turn ingestion call. Both are
    counted in ``events``; no turn is stored without a note unless the per-turn call itself falls back.
    """

    def __init__(self, single: Ingestor, backbone: ChatBackbone | None, cfg: MemCoReConfig, seed: int) -> None:
        self.single = single
        self.backbone = backbone
        self.cfg = cfg
        self.seed = seed
        self.events: Counter[str] = Counter()

    def ingest_many(self, turns: Sequence[Turn], previous: Sequence[Turn]) -> list[IngestResult]:
        """Notes for ``turns`` (consecutive, in order); ``previous`` = the turns before the chunk."""
        if self.backbone is None or len(turns) == 1:
            out, prev = [], list(previous)
            for t in turns:
                out.append(self.single.ingest(t, prev))
                prev = [*prev, t]
            return out
        got, calls = self._ask(turns, previous)
        missing = [i for i, g in enumerate(got) if g is None]
        filled: dict[int, IngestResult] = {}
        if len(missing) == len(turns):
            self.events["ingest_batch:split"] += 1
            half = len(turns) // 2
            results = [
                *self.ingest_many(turns[:half], previous),
                *self.ingest_many(turns[half:], [*previous, *turns[:half]]),
            ]
            filled = dict(enumerate(results))
        elif missing:
            self.events["ingest_batch:reask"] += len(missing)
            again = self.ingest_many([turns[i] for i in missing], [*previous, *turns[: missing[0]]])
            filled = dict(zip(missing, again, strict=True))
        out = [filled[i] if i in filled else self._result(turns[i], got[i]) for i in range(len(turns))]  # type: ignore[arg-type]
        out[0] = dataclasses.replace(out[0], llm_calls=out[0].llm_calls + calls)  # this call, counted once
        return out

    def _ask(self, turns: Sequence[Turn], previous: Sequence[Turn]) -> tuple[list[tuple[str, list[str]] | None], int]:
        """One batch call: per turn its (context, keywords) or None, and the calls it took."""
        ids = [t.dia_id for t in turns]
        prev = previous[-self.cfg.context_turns :] if self.cfg.context_turns else []
        shown = self.single.shown
        listing = "\n".join(
            f"[{t.dia_id}] ({t.session_time_raw}) {t.speaker}: {shown(t, clean_text(t.text))}" for t in turns
        )
        user = BATCH_PROMPT.INGEST_USER.format(
            previous="\n".join(shown(t, clean_text(t.render())) for t in prev) or "(none)",
            turns=listing,
            example_id=ids[0],
            max_keywords=self.cfg.max_keywords,
            n=len(turns),
        )
        validate = _validate_notes(ids)
        res = complete_json(
            self.backbone,  # type: ignore[arg-type]
            [{"role": "system", "content": BATCH_PROMPT.INGEST_SYSTEM}, {"role": "user", "content": user}],
            stage="ingest",
            validate=validate,
            fallback=[None] * len(turns),
            fallback_kind="ingest_batch:no_usable_reply",
            prompt_version=BATCH_PROMPT.INGEST_VERSION,
            temperature=self.cfg.temperature,
            max_tokens=min(MAX_BATCH_TOKENS, self.cfg.max_tokens * len(turns)),
            seed=self.seed,
            retry_truncated=False,
        )
        if res.ok or not res.truncated:
            return res.value, res.attempts
        try:
            return validate({"notes": salvage_list_items(res.raw)}), res.attempts
        except ValueError:
            return [None] * len(turns), res.attempts

    def _result(self, turn: Turn, got: tuple[str, list[str]]) -> IngestResult:
        context, keywords = got
        # the same keyword clean-up as the per-turn path
        kws = self.single._with_speaker(turn, drop_filler(normalise_keywords(keywords, limit=self.cfg.max_keywords)))
        if self.single.denoise:
            return IngestResult(self.single.shown(turn, context), kws, True, None, 0)
        return IngestResult(self.single.shown(turn, clean_text(turn.render())), kws, False, None, 0)


# ---------------------------------------------------------------------- gate
def _validate_pairs(
    plans: Sequence[Sequence[tuple[Ref, float]]],
) -> Callable[[Any], dict[tuple[int, Ref], tuple[float, str | None, str]]]:
    """Reply → {(new index, candidate ref): (strength, relation, edge)} for the listed pairs only."""
    allowed = {(i, ref) for i, plan in enumerate(plans) for ref, _ in plan}

    def parse_ref(text: Any) -> Ref | None:
        m = re.fullmatch(r"\s*([EN])\s*(\d+)\s*", str(text))
        return (m.group(1), int(m.group(2)) - 1) if m else None

    def validate(obj: Any) -> dict[tuple[int, Ref], tuple[float, str | None, str]]:
        if not isinstance(obj, dict) or not isinstance(obj.get("judgements"), list):
            raise ValueError("batch gate reply has no 'judgements' list")
        out: dict[tuple[int, Ref], tuple[float, str | None, str]] = {}
        for item in obj["judgements"]:
            if not isinstance(item, dict):
                continue
            new, cand = parse_ref(item.get("new")), parse_ref(item.get("candidate"))
            try:
                s = float(item["strength"])
            except (KeyError, TypeError, ValueError):
                continue
            if new is None or new[0] != "N" or cand is None or not np.isfinite(s):
                continue
            key = (new[1], cand)
            if key not in allowed:
                continue
            edge = str(item.get("edge", "Related_To")).strip()
            edge = next((e for e in EDGE_TYPES if e.lower() == edge.lower().replace(" ", "_")), "Related_To")
            out[key] = (min(1.0, max(0.0, s)), parse_relation(item.get("relation")), edge)
        return out

    return validate


class BatchedConstructor(Constructor):
    """A ``Constructor`` whose gate judgements for a chunk come from one call (``prejudge``), then are applied
    turn by turn through the unchanged ``add`` (its ``candidates``/``judge`` read the prepared judgements)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._plans: list[list[tuple[Ref, float]]] | None = None
        self._judged: dict[tuple[int, Ref], tuple[float, str | None, str]] = {}
        self._holders: list[int] = []

    def prejudge(self, contexts: Sequence[str], vecs: np.ndarray, dates: Sequence[str]) -> None:
        """Plan the candidates of every new note of the chunk and judge them all in one LLM call; every note is
        shown with its session date(s) (``dates``: the new turns' own), as the single-note gate shows them."""
        k = self.cfg.candidates
        n_store = len(self.store)
        plans: list[list[tuple[Ref, float]]] = []
        if n_store:
            ex_scores, ex_rows = self.store.vectors.search(vecs, k)
        inner = vecs @ vecs.T if len(vecs) else np.zeros((0, 0), dtype=np.float32)
        for i in range(len(contexts)):
            cands: list[tuple[Ref, float]] = []
            if n_store:
                cands += [(("E", int(r)), float(s)) for r, s in zip(ex_rows[i], ex_scores[i], strict=True)]
            cands += [(("N", j), float(inner[i, j])) for j in range(i)]
            cands.sort(key=lambda c: (-c[1], c[0]))
            plans.append(cands[:k])
        self._plans, self._holders, self._judged = plans, [], {}
        if self.backbone is None or not any(plans):
            return
        existing: dict[int, int] = {}
        for plan in plans:
            for (kind, idx), _ in plan:
                if kind == "E" and idx not in existing:
                    existing[idx] = len(existing) + 1
        ex_text = (
            "\n".join(f"[E{e}] {self.store.notes[nid].dated_context()}" for nid, e in existing.items()) or "(none)"
        )
        lines = []
        for i, (ctx, date, plan) in enumerate(zip(contexts, dates, plans, strict=True)):
            refs = ", ".join(f"E{existing[idx]}" if kind == "E" else f"N{idx + 1}" for (kind, idx), _ in plan)
            lines.append(f"[N{i + 1}] ({date}) {ctx}\n    candidates: {refs or '(none)'}")
        # Replies name existing notes E1..Em; map those labels back to note ids.
        label_to_nid = {e - 1: nid for nid, e in existing.items()}
        label_plans = [
            [(("E", existing[idx] - 1) if kind == "E" else (kind, idx), cos) for (kind, idx), cos in plan]
            for plan in plans
        ]
        user = BATCH_PROMPT.GATE_USER.format(existing=ex_text, new_notes="\n".join(lines))
        validate = _validate_pairs(label_plans)
        res = complete_json(
            self.backbone,
            [{"role": "system", "content": BATCH_PROMPT.GATE_SYSTEM}, {"role": "user", "content": user}],
            stage="ingest",
            validate=validate,
            fallback={},
            fallback_kind="gate_batch:append",
            prompt_version=BATCH_PROMPT.GATE_VERSION,
            temperature=self.cfg.temperature,
            max_tokens=min(MAX_BATCH_TOKENS, self.cfg.max_tokens * len(contexts)),
            seed=self.seed,
            retry_truncated=False,
        )
        self.counters.llm_calls += res.attempts
        judged = res.value
        if not res.ok:
            # A reply cut at max_tokens keeps its complete judgements; pairs it never reached count as unrelated.
            judged = validate({"judgements": salvage_list_items(res.raw)}) if res.truncated else {}
            self.counters.fallbacks["gate_batch:cut_kept_complete" if judged else "gate_batch:append"] += 1
        self._judged = {
            (i, ("E", label_to_nid[idx]) if kind == "E" else (kind, idx)): v for (i, (kind, idx)), v in judged.items()
        }

    def _current(self) -> list[tuple[Ref, float]]:
        assert self._plans is not None
        return self._plans[len(self._holders)]

    def _resolve(self, ref: Ref) -> int:
        kind, idx = ref
        return idx if kind == "E" else self._holders[idx]

    def candidates(self, vec: np.ndarray) -> list[tuple[int, float]]:
        if self._plans is None:
            return super().candidates(vec)
        best: dict[int, float] = {}
        for ref, cos in self._current():
            nid = self._resolve(ref)
            best[nid] = max(cos, best.get(nid, -1.0))
        return list(best.items())

    def judge(self, context: str, cands: list[tuple[int, float]], *, date: str = "") -> list[Judgement]:
        if self._plans is None or self.backbone is None:
            return super().judge(context, cands, date=date)
        i = len(self._holders)
        best: dict[int, Judgement] = {}
        for ref, cos in self._current():
            nid = self._resolve(ref)
            s, rel, edge = self._judged.get((i, ref), (0.0, "unrelated", "Related_To"))
            j = self.judgement(nid, cos, s, rel, edge)
            if nid not in best or j.strength > best[nid].strength:
                best[nid] = j
        return list(best.values())

    def add(self, turn_raw: RawTurn, ing: IngestResult, vec: np.ndarray | None = None) -> Note:
        note = super().add(turn_raw, ing, vec)
        if self._plans is not None:
            self._holders.append(note.nid)
            if len(self._holders) == len(self._plans):
                self._plans = None
        return note


# ---------------------------------------------------------------------- system
class MemCoReBatched(MemCoRe):
    """MemCoRe whose construction runs chunk by chunk (see the module docstring)."""

    constructor_class = BatchedConstructor

    def __init__(
        self,
        cfg: MemCoReConfig,
        switches: Switches,
        batch: BatchSettings,
        *,
        embedder: Embedder,
        backbone: Callable[[], ChatBackbone] | None,
        seed: int = 0,
    ) -> None:
        super().__init__(cfg, switches, embedder=embedder, backbone=backbone, seed=seed)
        self.batch = batch
        self._batch_ingestor: BatchIngestor | None = None

    def meta(self) -> dict[str, Any]:
        meta = super().meta()
        construction = {**meta["construction"], **dataclasses.asdict(self.batch)}
        meta["construction"] = construction
        meta["construction_hash"] = stable_hash({"construction": construction, "switches": meta["switches"]})[:20]
        return meta

    def _construction(self) -> Constructor:
        if self._constructor is None:
            super()._construction()  # the single-turn Ingestor and a BatchedConstructor (constructor_class)
            assert self._ingestor is not None
            self._batch_ingestor = BatchIngestor(self._ingestor, self.backbone, self.cfg, self.seed)
        return self._constructor

    def ingest(self, turn: Turn) -> None:
        self._refiner = None
        self._pending.append(turn)
        if len(self._pending) >= max(INGEST_BATCH, self.batch.ingest_batch_size):
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        cons = self._construction()
        assert isinstance(cons, BatchedConstructor) and self._batch_ingestor is not None
        pending, self._pending = self._pending, []
        size = self.batch.ingest_batch_size
        for start in range(0, len(pending), size):
            chunk = pending[start : start + size]
            results = self._batch_ingestor.ingest_many(chunk, self._recent)
            self._turns_ingested(len(chunk))
            cons.counters.fallbacks.update(self._batch_ingestor.events)
            self._batch_ingestor.events.clear()
            self._recent = [*self._recent, *chunk][-max(1, self.cfg.context_turns) :]
            vecs = self.embedder.encode([r.context for r in results])
            if self.sw.update and cons.backbone is not None and size > 1:
                cons.prejudge([r.context for r in results], vecs, [t.session_time_raw for t in chunk])
            for turn, ing, vec in zip(chunk, results, vecs, strict=True):
                cons.add(RawTurn(turn.dia_id, turn.speaker, turn.text, turn.session_time_raw), ing, vec)
                self._turn_built()


def _factory(ctx: MethodContext) -> MemCoReBatched:
    cfg, batch = split_config(dict(ctx.config))
    if not cfg.uses_llm:
        raise ConfigError("memcore-batched batches LLM calls; with judge=embedding use method=memcore-cheap")
    switches = Switches.from_dict(dict(ctx.ablation))
    return MemCoReBatched(cfg, switches, batch, embedder=ctx.embedder, backbone=lambda: ctx.backbone, seed=ctx.seed)


def validate_config(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    """``method=memcore-batched``: MemCoRe's fields, the two batching knobs (integers >= 1), an LLM judge."""
    where = f"method {name}"
    rest = {k: v for k, v in cfg.items() if k not in BATCH_KEYS}
    check_fields(MemCoReConfig, rest, prefix="method.", where=where, rules=rules_of(MemCoReConfig))
    for key in BATCH_KEYS:
        if key in cfg and (isinstance(cfg[key], bool) or not isinstance(cfg[key], int) or cfg[key] < 1):
            raise bad_value(f"method.{key}", cfg[key], "an integer >= 1", where)
    mc, _ = split_config(cfg)
    if not mc.uses_llm:
        raise bad_value("method.judge", mc.judge, "llm (for judge=embedding use method=memcore-cheap)", where)
    Switches.from_dict(ablation)


SPEC_BATCHED: MethodSpec = dataclasses.replace(
    SPEC,
    name="memcore-batched",
    factory=_factory,
    config_schema=(MemCoReConfig, BatchSettings),
    validate_config=validate_config,
    construction_keys=None,  # MemCoRe's build keys, then the batching knobs
    description="MemCoRe efficiency variant (not the paper's method): ingestion and gate batched over "
    "ingest_batch_size turns per LLM call (LightMem-style)",
    paper_row="",
    report_rank=None,
    sim_run_kinds=("memcore_batch_ingest", "memcore_batch_gate"),
    bad_configs=((("method.ingest_batch_size=0",), ("method.ingest_batch_size=0", ">= 1")),),
)
