"""LightMem's long-term entries and how a short-term batch becomes them: ONE LLM call with upstream's
``METADATA_GENERATE_PROMPT_locomo`` extracts standalone facts from the whole batch ("--- Topic k ---" blocks);
each fact keeps its source turn and every turn of its topic segment. A fact whose ``source_id`` is missing or
invalid is attributed by content (:func:`baselines.attribution.source_turn`) or, failing that, credited to no
turn. An unusable reply stores the batch's compressed turns verbatim."""

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


def parse_facts(n_messages: int) -> Any:
    """Validator for the extraction reply ``{"data": [{"source_id", "fact"}]}`` (or a bare list of items, which
    upstream's ``clean_response`` also accepts): returns ``[(source index or None, fact)]``; items without a
    usable fact are dropped, an out-of-range or missing source id becomes None."""

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
            if sid is not None and not 0 <= sid < n_messages:
                sid = None
            out.append((sid, fact.strip()))
        return out

    return validate


def message_time(turn: Turn, nth_in_session: int) -> tuple[str, str]:
    """``(time_stamp, weekday)`` as upstream shows a message: the session time plus one second per earlier
    message of that session in the batch (``assign_sequence_numbers_with_timestamps``: 500 ms per message,
    user and empty assistant messages alternating), ISO with milliseconds; e.g. ``2023-05-08T13:56:01.000``."""
    t = turn.session_time + timedelta(seconds=nth_in_session)
    return t.isoformat(timespec="milliseconds"), turn.session_time.strftime("%a")


def render_batch(batch: Batch, first_topic: int) -> str:
    """The extraction call's user message: one ``--- Topic <id> ---`` block per segment (ids from
    ``first_topic``, counted over the conversation), one line per message, source ids from 0 in the batch."""
    lines: list[str] = []
    seen: dict[str, int] = {}
    source_id = 0
    for k, seg in enumerate(batch):
        lines.append(P.TOPIC_HEADER.format(topic_id=first_topic + k))
        for b in seg:
            nth = seen.get(b.turn.session_time_raw, 0)
            seen[b.turn.session_time_raw] = nth + 1
            stamp, weekday = message_time(b.turn, nth)
            lines.append(
                P.MESSAGE_LINE.format(
                    time_stamp=stamp, weekday=weekday, source_id=source_id, speaker=b.turn.speaker, message=b.compressed
                )
            )
            source_id += 1
    return "\n".join(lines)


@dataclass
class FactExtractor:
    """One LightMem's extraction: numbers entries (``lm0``, ``lm1``, …) and topics across batches; counts
    ``extraction_calls``, ``extraction_fallbacks``, ``facts``, ``facts_without_source`` (no valid source id
    from the model) and ``facts_unattributed`` (of those, the ones whose content names no single turn either).
    ``backbone`` is a provider, called only when a batch is extracted."""

    cfg: LightMemConfig
    backbone: Callable[[], ChatBackbone]
    counters: dict[str, int]
    context_tokens: int | None = None
    seed: int = 0
    _next_id: int = field(default=0, init=False)
    _next_topic: int = field(default=0, init=False)

    def extract(self, batch: Batch, speakers: Sequence[str] = ()) -> list[LightMemEntry]:
        """The entries of one short-term batch (not yet embedded). ``speakers``: the conversation's speaker
        names, left out when a fact without a valid source id is attributed by content (every turn and many
        facts carry them, so they say nothing about which turn a fact came from)."""
        flat: list[BufferedTurn] = [b for seg in batch for b in seg]
        seg_of: list[int] = [k for k, seg in enumerate(batch) for _ in seg]
        topic_ids = list(range(self._next_topic, self._next_topic + len(batch)))
        user = render_batch(batch, self._next_topic)
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
            validate=parse_facts(len(flat)),
            fallback=None,
            fallback_kind="lightmem extraction → compressed turns stored verbatim",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            top_p=self.cfg.top_p,
            seed=self.seed if self.cfg.temperature > 0 else None,
            max_tokens=self.reply_budget(messages),
        )
        seg_ids = [tuple(b.turn.dia_id for b in seg) for seg in batch]
        batch_ids = tuple(d for ids in seg_ids for d in ids)
        new: list[LightMemEntry] = []
        if res.value is None:
            self.counters["extraction_fallbacks"] += 1
            for i, b in enumerate(flat):
                new.append(
                    self._entry(f"{b.turn.speaker}: {b.compressed}", b, seg_ids[seg_of[i]], topic_ids[seg_of[i]], "raw")
                )
        else:
            rendered = [(b.turn.dia_id, b.turn.render()) for b in flat]
            for sid, fact in res.value:
                if sid is not None:
                    new.append(self._entry(fact, flat[sid], seg_ids[seg_of[sid]], topic_ids[seg_of[sid]], "fact"))
                    continue
                # The model named no turn: credit the one turn the fact's content comes from, else none. The
                # segment stays the whole batch, so ``provenance: segment`` remains the lenient upper bound.
                self.counters["facts_without_source"] += 1
                by_content = source_turn(fact, rendered, speakers)
                if by_content is None:
                    # Dated and ordered as the batch's last turn: the latest turn the fact can have come from.
                    self.counters["facts_unattributed"] += 1
                    entry = self._entry(fact, flat[-1], batch_ids, topic_ids[seg_of[-1]], "fact")
                    entry.source_dia_ids = ()
                else:
                    k = next(i for i, (dia_id, _) in enumerate(rendered) if dia_id == by_content)
                    entry = self._entry(fact, flat[k], batch_ids, topic_ids[seg_of[k]], "fact")
                new.append(entry)
            self.counters["facts"] += len(new)
        return new

    def reply_budget(self, messages: list[dict[str, str]]) -> int:
        """``extract_max_tokens`` (upstream 16,000), capped to the backbone's context budget minus the prompt
        (approximate tokens), never below ``MIN_REPLY_TOKENS``."""
        if self.context_tokens is None:
            return self.cfg.extract_max_tokens
        left = self.context_tokens - sum(count_tokens(m["content"]) for m in messages)
        return max(MIN_REPLY_TOKENS, min(self.cfg.extract_max_tokens, left))

    def _entry(self, text: str, src: BufferedTurn, segment: tuple[str, ...], topic: int, kind: str) -> LightMemEntry:
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
        )
