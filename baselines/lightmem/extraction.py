"""LightMem's long-term entries and how a short-term batch becomes them: ONE LLM call with upstream's
``METADATA_GENERATE_PROMPT_locomo`` extracts standalone facts from the whole batch ("--- Topic k ---" blocks);
each fact keeps its source turn and every turn of its topic segment. An unusable reply stores the batch's
compressed turns verbatim.

Source ids and time stamps follow upstream's ``add_memory`` (``assign_sequence_numbers_with_timestamps`` and
``convert_extraction_results_to_memory_entries`` of zjunlp/LightMem @ 8fc9a91): one ``add_memory`` call is one
ingested turn (the last one's call also flushes the buffers), and every batch that call extracts numbers its
messages on from where the call's previous batch stopped; a message's stamp is its session's time plus one
second per earlier message of that session in the call. A fact's ``source_id`` (missing or not a number: 0)
dates the entry and names its speaker when the call has that message (else the entry has no stamp); its topic
is the message at the id clamped to the batch's last id (a negative id drops the fact, as upstream finds no
topic for it). Provenance is the harness's: the message the id names when the call has it, else the turn the
fact's content is attributed to (:func:`baselines.attribution.source_turn`), else none."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from baselines.attribution import source_turn
from baselines.lightmem import prompt_extract as P
from baselines.lightmem.buffers import Batch, BufferedTurn
from baselines.lightmem.config import LightMemConfig
from memcore.interfaces import ChatBackbone
from memcore.llm.json_reply import complete_json
from memcore.text import count_tokens
from memcore.types import Turn

#: Reply budget never capped below this, whatever the backbone's context budget.
MIN_REPLY_TOKENS = 256


@dataclass
class LightMemEntry:
    """One long-term memory entry. ``source_dia_ids`` is the turn the fact was extracted from (empty when
    neither the model's source id nor the fact's content names one); ``segment_dia_ids`` every turn of its
    topic segment (the whole extraction batch when the model gave no valid source id). A consolidation update
    keeps the source turns whose content the new text keeps and the union of the segments."""

    entry_id: str
    text: str
    source_dia_ids: tuple[str, ...]
    segment_dia_ids: tuple[str, ...]
    timestamp: str
    speaker: str
    order: int
    topic_id: int
    kind: str = "fact"  # fact | raw (extraction fallback) ; updated entries keep their kind
    # upstream's time_stamp: the source message's stamp as the extraction call showed it (ISO, ms); None when the
    # call has no message at the fact's id. The update queue's "earlier" compares these.
    stamp: str | None = None

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["source_dia_ids"] = list(self.source_dia_ids)
        d["segment_dia_ids"] = list(self.segment_dia_ids)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LightMemEntry:
        d = dict(d)
        d["source_dia_ids"] = tuple(d["source_dia_ids"])
        d["segment_dia_ids"] = tuple(d["segment_dia_ids"])
        return cls(**d)


def parse_facts() -> Any:
    """Validator for the extraction reply ``{"data": [{"source_id", "fact"}]}`` (or a bare list of items, which
    upstream's ``clean_response`` also accepts): returns ``[(source id or None, fact)]``; items without a usable
    fact are dropped, a missing or non-numeric source id is None (upstream reads a missing one as 0)."""

    def validate(obj: Any) -> list[tuple[int | None, str]]:
        if isinstance(obj, list):
            items = obj
        elif isinstance(obj, dict) and "data" in obj:
            items = obj["data"]
        elif isinstance(obj, dict) and "facts" in obj:
            items = obj["facts"]
        else:
            raise ValueError('reply needs a "data" list')
        if not isinstance(items, list):
            raise ValueError('"data" must be a list')
        out: list[tuple[int | None, str]] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            fact = item.get("fact")
            if not isinstance(fact, str) or not fact.strip():
                continue
            sid: int | None
            try:
                sid = int(str(item.get("source_id", "")).strip())
            except ValueError:
                sid = None
            out.append((sid, fact.strip()))
        return out

    return validate


def message_time(turn: Turn, nth_in_session: int) -> tuple[str, str]:
    """``(time_stamp, weekday)`` as upstream shows a message: the session time plus one second per earlier
    message of that session in the ``add_memory`` call (``assign_sequence_numbers_with_timestamps``: 500 ms per message,
    user and empty assistant messages alternating), ISO with milliseconds; e.g. ``2023-05-08T13:56:01.000``."""
    t = turn.session_time + timedelta(seconds=nth_in_session)
    return t.isoformat(timespec="milliseconds"), turn.session_time.strftime("%a")


@dataclass
class CallNumbering:
    """The numbering of one ``add_memory`` call: source ids and per-session stamp offsets run on across the
    batches the call extracts. ``messages[i]`` is the message shown with source id ``i`` and ``stamps[i]`` its stamp."""

    messages: list[BufferedTurn] = field(default_factory=list)
    stamps: list[str] = field(default_factory=list)
    per_session: dict[str, int] = field(default_factory=dict)


def render_batch(batch: Batch, first_topic: int, call: CallNumbering | None = None) -> str:
    """The extraction call's user message: one ``--- Topic <id> ---`` block per segment (ids from
    ``first_topic``, counted over the conversation), one line per message, source ids and stamps continuing
    ``call``'s numbering (a fresh one: from 0), which this extends."""
    call = CallNumbering() if call is None else call
    lines: list[str] = []
    for k, seg in enumerate(batch):
        lines.append(P.TOPIC_HEADER.format(topic_id=first_topic + k))
        for b in seg:
            nth = call.per_session.get(b.turn.session_time_raw, 0)
            call.per_session[b.turn.session_time_raw] = nth + 1
            stamp, weekday = message_time(b.turn, nth)
            lines.append(
                P.MESSAGE_LINE.format(
                    time_stamp=stamp,
                    weekday=weekday,
                    source_id=len(call.messages),
                    speaker=b.turn.speaker,
                    message=b.compressed,
                )
            )
            call.messages.append(b)
            call.stamps.append(stamp)
    return "\n".join(lines)


@dataclass
class FactExtractor:
    """One LightMem's extraction: numbers entries (``lm0``, ``lm1``, …) and topics across batches, source ids per
    ``add_memory`` call (:meth:`begin_call`); counts ``extraction_calls``, ``extraction_fallbacks``, ``facts``,
    ``facts_without_source`` (no source id the call has: missing, not a number or past the call's messages),
    ``facts_unattributed`` (of those, the ones whose content names no single turn either), ``facts_source_clamped``
    (an id past the batch's last, its topic taken at the clamped id), ``facts_without_stamp`` (an id the call has no
    message for: no stamp, so out of the update queues) and ``facts_dropped`` (a negative id).
    ``backbone`` is a provider, called only when a batch is extracted."""

    cfg: LightMemConfig
    backbone: Callable[[], ChatBackbone]
    counters: dict[str, int]
    prompt_token_cap: int | None = None
    seed: int = 0
    _next_id: int = field(default=0, init=False)
    _next_topic: int = field(default=0, init=False)
    _call: CallNumbering = field(default_factory=CallNumbering, init=False)
    _call_topics: list[int] = field(default_factory=list, init=False)
    _call_segments: list[tuple[str, ...]] = field(default_factory=list, init=False)

    def begin_call(self) -> None:
        """Start a new ``add_memory`` call: source ids and stamps restart."""
        self._call = CallNumbering()
        self._call_topics, self._call_segments = [], []

    def extract(self, batch: Batch, speakers: Sequence[str] = ()) -> list[LightMemEntry]:
        """The entries of one short-term batch (not yet embedded). ``speakers``: the conversation's speaker
        names, left out when a fact is attributed by content (every turn and many facts carry them, so they say
        nothing about which turn a fact came from)."""
        flat: list[BufferedTurn] = [b for seg in batch for b in seg]
        topic_ids = list(range(self._next_topic, self._next_topic + len(batch)))
        seg_ids = [tuple(b.turn.dia_id for b in seg) for seg in batch]
        first = len(self._call.messages)
        user = render_batch(batch, self._next_topic, self._call)
        for k, seg in enumerate(batch):
            self._call_topics += [topic_ids[k]] * len(seg)
            self._call_segments += [seg_ids[k]] * len(seg)
        self._next_topic += len(batch)
        messages = [
            {"role": "system", "content": P.METADATA_GENERATE_PROMPT_LOCOMO},
            {"role": "user", "content": user},
        ]
        self.counters["extraction_calls"] += 1
        res = complete_json(
            self.backbone(),
            messages,
            stage="ingest",
            validate=parse_facts(),
            fallback=None,
            fallback_kind="lightmem extraction → compressed turns stored verbatim",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            top_p=self.cfg.top_p,
            seed=self.seed if self.cfg.temperature > 0 else None,
            max_tokens=self.reply_budget(messages),
        )
        new: list[LightMemEntry] = []
        if res.value is None:
            self.counters["extraction_fallbacks"] += 1
            for i, b in enumerate(flat):
                k = first + i
                text = f"{b.turn.speaker}: {b.compressed}"
                new.append(self._entry(text, b, self._call_segments[k], self._call_topics[k], "raw", k))
            return new
        rendered = [(b.turn.dia_id, b.turn.render()) for b in flat]
        batch_ids = tuple(d for ids in seg_ids for d in ids)
        for raw_sid, fact in res.value:
            entry = self._fact_entry(raw_sid, fact, len(flat) - 1, rendered, batch_ids, speakers)
            if entry is not None:
                new.append(entry)
        self.counters["facts"] += len(new)
        return new

    def _fact_entry(
        self,
        raw_sid: int | None,
        fact: str,
        batch_max: int,
        rendered: list[tuple[str, str]],
        batch_ids: tuple[str, ...],
        speakers: Sequence[str],
    ) -> LightMemEntry | None:
        """One fact's entry by upstream's rules (module docstring); None for a negative id."""
        sid = 0 if raw_sid is None else raw_sid
        topic_at = min(sid, batch_max)
        self.counters["facts_source_clamped"] += int(sid > batch_max)
        if topic_at < 0:
            self.counters["facts_dropped"] += 1
            return None
        call = self._call
        named = raw_sid is not None and 0 <= raw_sid < len(call.messages)
        src = call.messages[sid] if sid < len(call.messages) else call.messages[topic_at]
        entry = self._entry(fact, src, self._call_segments[topic_at], self._call_topics[topic_at], "fact", None)
        if sid < len(call.messages):
            entry.stamp = call.stamps[sid]
        else:
            self.counters["facts_without_stamp"] += 1
        if named:
            return entry
        # The model named no message of the call: credit the one turn the fact's content comes from, else none.
        # The segment is the whole batch, so ``provenance: segment`` remains the lenient upper bound.
        self.counters["facts_without_source"] += 1
        entry.segment_dia_ids = batch_ids
        by_content = source_turn(fact, rendered, speakers)
        entry.source_dia_ids = () if by_content is None else (by_content,)
        self.counters["facts_unattributed"] += int(by_content is None)
        return entry

    def reply_budget(self, messages: list[dict[str, str]]) -> int:
        """``extract_max_tokens`` (upstream 16,000), capped to the backbone's prompt token cap minus the prompt
        (approximate tokens), never below ``MIN_REPLY_TOKENS``."""
        if self.prompt_token_cap is None:
            return self.cfg.extract_max_tokens
        left = self.prompt_token_cap - sum(count_tokens(m["content"]) for m in messages)
        return max(MIN_REPLY_TOKENS, min(self.cfg.extract_max_tokens, left))

    def _entry(
        self, text: str, src: BufferedTurn, segment: tuple[str, ...], topic: int, kind: str, at: int | None
    ) -> LightMemEntry:
        """An entry sourced at ``src``; ``at``: its source id in the call, whose stamp it takes."""
        self._next_id += 1
        return LightMemEntry(
            entry_id=f"lm{self._next_id - 1}",
            text=text,
            source_dia_ids=(src.turn.dia_id,),
            segment_dia_ids=segment,
            timestamp=src.turn.session_time_raw,
            speaker=src.turn.speaker,
            order=src.order,
            topic_id=topic,
            kind=kind,
            stamp=None if at is None else self._call.stamps[at],
        )
