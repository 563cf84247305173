"""The LoCoMo baseline: the whole conversation, with session dates, in the answer prompt.

Layout and truncation follow ``get_input_context`` / ``get_gpt_answers`` of the official
snap-research/locomo ``task_eval/evaluate_gpts.py`` (commit 9228632): the conversation header
``CONV_START_PROMPT`` naming both speakers, then per session ``DATE: <date>\\nCONVERSATION:\\n`` and one
``<speaker> said, "<text>"`` line per turn, sessions back to back (no blank line between them). The official
code appends ``"\\n\\n"`` to the context for every session it includes *after* the last session (it builds
the context from the newest session backwards and appends, not prepends, the blank lines), so the context
ends with the last turn's newline and two newlines per session: reproduced here. When the conversation
exceeds the budget, **turns** are dropped from the oldest end, one at a time, so the oldest kept session may
be partial (its DATE header stays). The budget counts everything in the context (the header, every session's
DATE/CONVERSATION lines, the turn lines) and reserves room for the question's prompt and the answer, as the
official ``MAX_LENGTH - PER_QA_TOKEN_BUDGET`` check does; under ``protocol=locomo`` with the official reserve
(:func:`official_question_reserve`) and its strict ``<``.

Image captions (``image_captions``): the official code writes ``[shares <blip_caption>]`` after a turn only
when the turn has an ``img_file`` key, which the released ``locomo10.json`` does not have, so the official
run writes none (``none``, the default); ``shares`` writes the line after every turn with a caption (1,226
turns), as this harness did before.

Batch mode (``batch_size`` > 1, protocol ``locomo``): :class:`BatchedFullContext` asks ``batch_size``
consecutive questions of a conversation in one call with ``QA_PROMPT_BATCH``
(:mod:`baselines.locomo_batch_prompt`), as the published full-context rows were run
(``scripts/evaluate_gpts.sh``: batch 20 / 10), splits the JSON reply into the items' answers and scores each
item alone. A reply that does not split into the batch's answers is retried (``batch_attempts`` in all),
then every item of the batch is answered on its own by the run's answerer: counted in the stats
(``batch_fallbacks``, ``items_answered_singly``), in the usage tracker's parse failures, and logged.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines import locomo_batch_prompt as B
from baselines.turns import load_turns, save_turns, text_without_caption, turn_note
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.datasets.locomo.prompts import answer as answer_prompts
from memcore.datasets.locomo.protocols import adversarial_options
from memcore.eval.protocols import EvalProtocol, get_protocol
from memcore.interfaces import BadConfig, ChatBackbone, MethodContext, MethodSpec
from memcore.llm.usage import usage_of
from memcore.packing.budget import BUDGET_KEY, budget_record
from memcore.schema import POS, Rule, check_rules, knob, method_validator
from memcore.text import count_tokens, truncate_to_tokens
from memcore.types import Conversation, Evidence, QAItem, Turn

log = logging.getLogger(__name__)

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"full_context": "baselines.full_context:SPEC"}

#: ``CONV_START_PROMPT`` of the official ``task_eval/evaluate_gpts.py``, verbatim (its typo "wriiten" included).
CONV_START_PROMPT = (
    "Below is a conversation between two people: {} and {}. The conversation takes place over multiple days "
    "and the date of each conversation is wriiten at the beginning of the conversation.\n\n"
)

#: The official ``PER_QA_TOKEN_BUDGET``: tokens reserved for one answer.
PER_QA_TOKEN_BUDGET = 50


def _prompt_overhead_tokens() -> int:
    """Approximate tokens of the longest answer prompt around context and question (system message and the
    "Not mentioned" option included), over both protocols."""
    p = answer_prompts
    amem = count_tokens(p.AMEM_SYSTEM) + max(count_tokens(t) for t in p.AMEM_BY_CATEGORY.values())
    locomo = count_tokens(p.LOCOMO_QA_PROMPT) + max(
        count_tokens(p.LOCOMO_TEMPORAL_SUFFIX), count_tokens(p.LOCOMO_ADVERSARIAL_SUFFIX)
    )
    return max(amem, locomo) + count_tokens(p.NOT_MENTIONED)


PROMPT_OVERHEAD_TOKENS = _prompt_overhead_tokens()


IMAGE_CAPTIONS = ("none", "shares")


@dataclass(frozen=True)
class FullContextConfig:
    name: str = "full_context"
    prompt_token_cap: int | None = knob(None, rule=POS)  # None: the backbone preset's prompt_token_cap
    answer_reserve_tokens: int = PER_QA_TOKEN_BUDGET  # room kept for the answer (per question)
    prompt_reserve_tokens: int | None = None  # room for the answer prompt around context + question; None: measured
    # none: as the official code writes locomo10.json (no caption) | shares: a [shares <caption>] line
    image_captions: str = knob("none", rule=Rule(choices=IMAGE_CAPTIONS))
    batch_size: int = knob(1, rule=POS)  # questions per answer call; > 1: QA_PROMPT_BATCH (protocol locomo)
    batch_attempts: int = knob(2, rule=POS)  # calls per batch before its items are answered one by one
    protocol: str | None = None  # the run's protocol (${protocol.name}); batch mode needs locomo

    def __post_init__(self) -> None:
        check_rules(self, "full_context")
        if self.batch_size > 1 and self.protocol not in (None, "locomo"):
            raise ValueError(
                f"full_context: batch_size={self.batch_size} asks QA_PROMPT_BATCH, the official LoCoMo evaluation's "
                f"prompt; run it with protocol=locomo (got protocol={self.protocol}) or set method.batch_size=1"
            )


def official_question_reserve(questions: Sequence[str], per_answer: int) -> int:
    """``get_gpt_answers``' room for the questions (batch size 1 included): ``QA_PROMPT_BATCH`` followed by the
    numbered questions (``0: <question>``), plus ``per_answer`` (``PER_QA_TOKEN_BUDGET``) per question."""
    prompt = B.QA_PROMPT_BATCH + "\n".join(f"{k}: {q}" for k, q in enumerate(questions))
    return count_tokens(prompt) + per_answer * len(questions)


def session_header(date: str) -> str:
    """The official per-session header."""
    return f"DATE: {date}\nCONVERSATION:\n"


def turn_line(turn: Turn, image_captions: str = "none") -> str:
    """One turn as the official code writes it, with its trailing newline (``Turn.text``'s inline caption tag
    taken off); with ``image_captions="shares"`` an image turn's caption follows on a ``[shares <caption>]``
    line."""
    line = f'{turn.speaker} said, "{text_without_caption(turn)}"\n'
    if image_captions == "shares" and turn.image_caption:
        line += f"[shares {turn.image_caption}]\n"
    return line


def conversation_header(speaker_a: str, speaker_b: str) -> str:
    return CONV_START_PROMPT.format(speaker_a, speaker_b)


class FullContext:
    """Whole-conversation context cut to ``budget_tokens`` (the prompt budget of the backbone).

    ``retrieve(question)`` returns the most recent turns whose context (header + session headers + lines)
    fits ``budget_tokens`` minus the question's prompt reserve; contexts are cached per reserve size.
    """

    def __init__(self, cfg: FullContextConfig, budget_tokens: int, speakers: tuple[str, str] = ("", "")) -> None:
        self.cfg = cfg
        self.budget = budget_tokens
        self.speakers = speakers
        self.turns: list[Turn] = []
        self._cache: dict[tuple[int | None, ...], Evidence] = {}
        self._lock = threading.Lock()

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._cache = {}

    def finalize(self) -> None:
        pass

    def _speakers(self) -> tuple[str, str]:
        a, b = self.speakers
        if a and b:
            return a, b
        names = [*dict.fromkeys(t.speaker for t in self.turns), "", ""]
        return names[0], names[1]

    def reserve_tokens(self, query: str) -> int:
        """Tokens kept free for the answer prompt, the question and the answer: under ``protocol=locomo`` the
        official reserve (:func:`official_question_reserve` of the one question), else the longest answer prompt
        of either protocol (or ``prompt_reserve_tokens``) + the question + ``answer_reserve_tokens``."""
        if self._official and self.cfg.prompt_reserve_tokens is None:
            return official_question_reserve([query], self.cfg.answer_reserve_tokens)
        overhead = PROMPT_OVERHEAD_TOKENS if self.cfg.prompt_reserve_tokens is None else self.cfg.prompt_reserve_tokens
        return overhead + count_tokens(query) + self.cfg.answer_reserve_tokens

    @property
    def _official(self) -> bool:
        """The official evaluation's context rule applies (strict ``<``, its question reserve)."""
        return self.cfg.protocol == "locomo"

    def build(self, reserve: int = 0, max_turns: int | None = None, limit: int | None = None) -> Evidence:
        """The context for a prompt that needs ``reserve`` tokens besides it; ``max_turns`` (``eval.note_cap``)
        also caps the number of turns, so the run gets as many notes as every other method; ``limit``
        (``eval.token_cap``) caps the context's own tokens, header included."""
        header = conversation_header(*self._speakers())
        limit = self.budget - reserve if limit is None else min(limit, self.budget - reserve)
        used = count_tokens(header)
        kept: list[Turn] = []
        open_session: int | None = None
        for turn in reversed(self.turns):
            if max_turns is not None and len(kept) >= max_turns:
                break
            # the official check adds the session's header (and its trailing blank lines) to each turn's count while
            # the header enters the context once: charged once per session, the same total
            opening = turn.session_index != open_session
            extra = count_tokens(session_header(turn.session_time_raw)) + count_tokens("\n\n") if opening else 0
            cost = count_tokens(turn_line(turn, self.cfg.image_captions)) + extra
            if used + cost > limit or (self._official and used + cost == limit):  # official: strictly below
                break
            kept.append(turn)
            used += cost
            open_session = turn.session_index
        kept.reverse()
        parts = [header]
        current: int | None = None
        sessions = 0
        for turn in kept:
            if turn.session_index != current:
                parts.append(session_header(turn.session_time_raw))
                current = turn.session_index
                sessions += 1
            parts.append(turn_line(turn, self.cfg.image_captions))
        parts.append("\n\n" * sessions)  # the official code's per-session blank lines, all at the end
        return Evidence(
            notes=[turn_note(t, channels=("full_context",)) for t in kept],
            context="".join(parts),
            extra={"turns_kept": len(kept), "turns_total": len(self.turns), "reserve_tokens": reserve},
        )

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """The most recent turns that fit; ``budget`` (``eval.note_cap``) keeps at most that many turns."""
        reserve = self.reserve_tokens(query)
        key = (reserve, budget)
        with self._lock:
            ev = self._cache.get(key)
        if ev is None:
            ev = self.build(reserve, budget)
            with self._lock:
                self._cache[key] = ev
        return ev

    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
        """``memcore.packing.budget.ContextBudgeted``: the official truncation at ``tokens`` (the most recent turns whose
        context, header and session headers included, fits). When not even the last turn fits, the context is
        the last turn's block cut at the budget, and the record says so."""
        reserve = self.reserve_tokens(query)
        key = (reserve, budget, tokens)
        with self._lock:
            ev = self._cache.get(key)
        if ev is None:
            ev = self.build(reserve, budget, limit=tokens)
            kept = int(ev.extra["turns_kept"])
            cut = kept == 0 and bool(self.turns)
            if cut:
                last = self.turns[-1]
                block = (
                    conversation_header(*self._speakers())
                    + session_header(last.session_time_raw)
                    + turn_line(last, self.cfg.image_captions)
                )
                ev = Evidence(
                    notes=[turn_note(last, channels=("full_context",))],
                    context=truncate_to_tokens(block, tokens),
                    extra=dict(ev.extra, turns_kept=1),
                )
            ev.extra[BUDGET_KEY] = budget_record(
                tokens,
                kept=max(kept, int(cut)),
                dropped=len(self.turns) - max(kept, int(cut)),
                cut=cut,
                how="most_recent_turns",
            )
            with self._lock:
                self._cache[key] = ev
        return ev

    def save(self, path: Path) -> None:
        save_turns(self.turns, path / "turns.jsonl")

    def load(self, path: Path) -> None:
        self.turns = load_turns(path / "turns.jsonl")
        self._cache = {}

    def stats(self) -> dict[str, Any]:
        ev = self.build(0)
        return {"turns": len(self.turns), "turns_kept_without_reserve": ev.extra["turns_kept"]}


def batch_question(item: QAItem, options: tuple[str, ...]) -> str:
    """A question as the official batch lists it: category 2 with the DATE instruction, category 5 with its
    two options (the same suffixes as a single question's)."""
    question = item.question
    if Category(int(item.category)) is Category.TEMPORAL:
        question += answer_prompts.LOCOMO_TEMPORAL_SUFFIX
    elif options:
        question += answer_prompts.LOCOMO_ADVERSARIAL_SUFFIX.format(option_a=options[0], option_b=options[1])
    return question


def parse_batch_reply(reply: str, n: int) -> list[str]:
    """The ``n`` answers of a batch reply, read as the official code reads it (``get_gpt_answers`` and
    ``process_ouput``): escaped quotes and code fences dropped, single quotes read as JSON quotes when they
    outnumber double quotes, then the JSON object's ``"0"`` … ``"n-1"`` entries (an entry that is itself an
    object becomes its values joined by ", "). Raises ValueError when the reply does not split into ``n``
    answers."""
    text = reply.replace('\\"', "'").replace("json", "").replace("`", "").strip().replace("\\'", "")
    if text.count("'") > text.count('"'):
        text = text.replace('"', "").replace("'", '"')
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"batch reply is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"batch reply is a JSON {type(obj).__name__}, not an object keyed by question number")
    missing = [str(k) for k in range(n) if str(k) not in obj]
    if missing:
        raise ValueError(f"batch reply has no answer for question(s) {', '.join(missing)}")
    out = []
    for k in range(n):
        value = obj[str(k)]
        out.append(", ".join(str(v) for v in value.values()) if isinstance(value, dict) else str(value))
    return out


@dataclass
class _BatchResult:
    answers: list[str] | None  # None: the reply never split; the items are answered one by one
    evidence: Evidence
    attempts: int
    reply: str


class BatchedFullContext(FullContext):
    """``full_context`` with ``batch_size`` > 1: a :class:`~memcore.interfaces.SelfAnsweringMemory` that answers
    the conversation's questions ``batch_size`` at a time (consecutive items of ``qa`` in file order, as the
    official loop), each batch with one call; see the module docstring."""

    def __init__(
        self,
        cfg: FullContextConfig,
        budget_tokens: int,
        speakers: tuple[str, str],
        *,
        qa: tuple[QAItem, ...],
        backbone: Callable[[], ChatBackbone],
        protocol: EvalProtocol,
        seed: int,
    ) -> None:
        super().__init__(cfg, budget_tokens, speakers)
        self.qa = qa
        self._index = {q.item_id: i for i, q in enumerate(qa)}
        self._backbone = backbone
        self.protocol = protocol
        self.seed = seed
        self._batches: dict[int, _BatchResult] = {}
        self.counters = {"batches": 0, "batch_calls": 0, "batch_fallbacks": 0, "items_answered_singly": 0}

    def _options(self, item: QAItem) -> tuple[str, ...]:
        adversarial = Category(int(item.category)) is Category.ADVERSARIAL
        return adversarial_options(item, self.seed) if adversarial else ()

    def _ask(self, batch: list[QAItem]) -> _BatchResult:
        """One batch: the context that leaves room for the questions and their answers, then up to
        ``batch_attempts`` calls until the reply splits into one answer per question."""
        options = [self._options(q) for q in batch]
        questions = [batch_question(q, o) for q, o in zip(batch, options)]
        evidence = self.build(official_question_reserve(questions, self.cfg.answer_reserve_tokens))
        messages = [{"role": "user", "content": B.batch_query(evidence.context, questions)}]
        backbone = self._backbone()
        usage = usage_of(backbone)
        reply, error = "", ""
        self.counters["batches"] += 1
        for attempt in range(1, self.cfg.batch_attempts + 1):
            self.counters["batch_calls"] += 1
            reply = backbone.complete(
                messages,
                stage="answer",
                temperature=0.0,
                max_tokens=self.cfg.answer_reserve_tokens * len(batch),
                prompt_version=B.VERSION if attempt == 1 else f"{B.VERSION}#retry-{attempt}",
            ).text
            try:
                raw = parse_batch_reply(reply, len(batch))
            except ValueError as exc:
                error = str(exc)
                if attempt < self.cfg.batch_attempts and usage is not None:
                    usage.record_parse_retry("answer")
                continue
            answers = []
            for value, opts in zip(raw, options):
                if not opts:
                    value = value.replace("(a)", "").replace("(b)", "").strip()
                answers.append(self.protocol.postprocess(value, opts))
            return _BatchResult(answers, evidence, attempt, reply)
        self.counters["batch_fallbacks"] += 1
        if usage is not None:
            usage.record_parse_failure("answer", "batch_item_by_item")
        log.warning(
            "full_context: a batch of %d questions (%s…) did not split into answers after %d attempts (%s); "
            "answering them one by one. Reply: %r",
            len(batch),
            batch[0].item_id,
            self.cfg.batch_attempts,
            error,
            reply[:200],
        )
        return _BatchResult(None, evidence, self.cfg.batch_attempts, reply)

    def answer(self, item: QAItem, answer_fn: Callable[[str], str]) -> tuple[str, Evidence]:
        """``item``'s answer from its batch (asked on the batch's first item); after a failed batch, the run's
        answerer on ``item``'s own context."""
        index = self._index.get(item.item_id)
        if index is None:
            raise KeyError(f"full_context: item {item.item_id} is not a question of this conversation")
        size = self.cfg.batch_size
        number, position = divmod(index, size)
        with self._lock:
            result = self._batches.get(number)
        if result is None:
            result = self._ask(list(self.qa[number * size : (number + 1) * size]))
            with self._lock:
                self._batches[number] = result
        info = {"batch": number, "position": position, "size": min(size, len(self.qa) - number * size)}
        info.update(attempts=result.attempts, reply=result.reply, prompt_version=B.VERSION)
        if result.answers is None:
            evidence = self.retrieve(item.question)
            self.counters["items_answered_singly"] += 1
            text = answer_fn(evidence.render())
            extra = dict(evidence.extra, batch={**info, "fallback": True})
            evidence = Evidence(notes=evidence.notes, context=evidence.context, extra=extra)
            return text, evidence
        ev = result.evidence
        extra = dict(ev.extra, batch={**info, "fallback": False})
        return result.answers[position], Evidence(notes=ev.notes, context=ev.context, extra=extra)

    def after_qa(self) -> None:
        """Nothing to do after the last question: every batch was answered as its first item came."""

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), **self.counters, "batch_size": self.cfg.batch_size}


def _factory(ctx: MethodContext) -> FullContext:
    cfg = FullContextConfig(**ctx.config)
    budget = cfg.prompt_token_cap or int(ctx.extras.get("prompt_token_cap", 6000))
    conv = ctx.conversation
    speakers = (conv.speaker_a, conv.speaker_b)
    if cfg.batch_size > 1:
        return BatchedFullContext(
            cfg,
            budget,
            speakers,
            qa=conv.qa,
            backbone=lambda: ctx.backbone,
            protocol=get_protocol(cfg.protocol or "locomo"),
            seed=int(ctx.extras.get("seed", ctx.seed)),
        )
    return FullContext(cfg, budget, speakers)


def run_image_captions(method_cfg: dict[str, Any]) -> str:
    """A recorded run's ``image_captions``; runs recorded before the knob existed wrote ``[shares …]`` lines."""
    return str(method_cfg.get("image_captions", "shares"))


def full_conversation_tokens(
    budget: int | None = None, conversations: Sequence[Conversation] | None = None, image_captions: str = "none"
) -> float:
    """Mean size (approximate tokens, ``memcore.text.count_tokens``, the unit of items' ``tokens_used``)
    of the context full_context builds for a whole conversation under ``budget``: each of ``conversations``
    (default: all of LoCoMo), with its ``image_captions`` setting."""
    if conversations is None:
        conversations = load_locomo(resolve_locomo_path(None)).conversations
    sizes = []
    for conv in conversations:
        fc = FullContext(FullContextConfig(image_captions=image_captions), budget or 10**9)
        for turn in conv.turns:
            fc.ingest(turn)
        fc.finalize()
        sizes.append(count_tokens(fc.retrieve("").render()))
    return sum(sizes) / len(sizes)


def _whole_context_tokens(
    method_cfg: dict[str, Any], budget: int | None, conversations: Sequence[Conversation] | None
) -> float:
    return full_conversation_tokens(budget, conversations, run_image_captions(method_cfg))


BAD_CONFIGS: tuple[BadConfig, ...] = (
    (("method.answer_reserve_tokens=-5",), ("method.answer_reserve_tokens=-5", ">= 0")),
    (("method.prompt_token_cap=0",), ("method.prompt_token_cap=0", ">= 1")),
    (("method.batch_size=20",), ("batch_size=20", "protocol=locomo")),
    (("method.image_captions=inline",), ("method.image_captions='inline'", "none, shares")),
)

SPEC = MethodSpec(
    name="full_context",
    factory=_factory,
    ingest_uses_llm=lambda c, a: False,
    retrieve_uses_llm=lambda c, a: int(c.get("batch_size", 1)) > 1,
    config_schema=(FullContextConfig,),  # no build fields: the stored turns do not depend on the config
    validate_config=method_validator(FullContextConfig, build=lambda name, cfg: FullContextConfig(**cfg)),
    description="LoCoMo full-context baseline (official layout; oldest turns cut to the backbone's budget)",
    upstream_answer="baselines.locomo_answer_prompt:UPSTREAM",
    budget_counts="most recent turns",
    paper_row="locomo",  # the paper's LoCoMo row is the full-context baseline
    report_rank=10,
    whole_context_tokens=_whole_context_tokens,
    sim_run_kinds=("answer_amem",),
    bad_configs=BAD_CONFIGS,
)
