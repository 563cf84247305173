"""Iterative evidence refinement (IER): judge the pool, issue sub-queries, re-run the channels, ≤ I_max rounds.

Round 1 is the plain tri-pathway retrieval (``ier_max_rounds`` counts it). After each round short of
``ier_max_rounds`` a judge decides whether the pool (its top ``k_final``) suffices; if not, up to
``ier_max_subqueries`` *new* sub-queries re-run the channels (a sub-query already issued in an earlier round is
dropped; when none is new, refinement stops), and the pool becomes the RRF of every round's ranked list
(the question's list has weight 1, each sub-query's ``ier_subquery_weight``). ``ier_reserved`` > 0 also keeps
each sub-query's best notes in the top ``k_final``, so that evidence only a sub-query finds cannot be drowned
by the question's own (longer) list. Refinement also stops when a round adds no note to the top ``k_final``.

The judge is the LLM in LLM mode: it sees the whole notes with their dates, best first, up to
``ier_judge_tokens`` tokens, and the searches already made. Cheap mode uses a documented rule instead: a
query entity is *covered* when one of the keywords it matched in memory (cosine ≥ keyword_min_sim) belongs to
a pooled note; the pool suffices when every matchable entity is covered, otherwise each uncovered entity (not
yet issued) becomes a sub-query (topic = entity = the entity text).

Every question's stop reason is logged (``stop``: sufficient | max_rounds | repeated_subqueries |
no_new_evidence | no_subqueries) and counted in the system's stats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memcore.fusion import rrf_fuse
from memcore.interfaces import ChatBackbone
from memcore.llm.json_reply import complete_json
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.keywords import KeywordIndex, normalise_keywords
from memcore.memory.retrieval import Decomposer, QueryPlan, Retriever, RoundResult, cheap_plan
from memcore.prompts import ier as IER_PROMPT
from memcore.prompts import ier_answer_first as IER_ANSWER_FIRST_PROMPT
from memcore.text import count_tokens, truncate_to_tokens


@dataclass
class RefinedPool:
    ranked: list[int]
    scores: dict[int, float]
    channels: dict[int, set[str]]
    rounds: int
    plan: QueryPlan
    log: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    stop: str = "max_rounds"
    first: list[int] = field(default_factory=list)  # round 1's ranking (the pool without refinement)


def subquery_key(text: str) -> str:
    """What makes two sub-queries the same: lower-cased words, punctuation and spacing ignored."""
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def fuse_rounds(
    lists: dict[str, list[int]], *, k: int, weight: float, reserved: int, k_final: int
) -> list[tuple[int, float]]:
    """RRF over the question's list ``"q"`` (weight 1) and the sub-query lists (``weight``), then, with
    ``reserved`` > 0, each sub-query's best ``reserved`` notes are lifted into the top ``k_final`` (in fused-score
    order, displacing the lowest-scored notes that are not reserved). Pure; returns (note, score) ranked."""
    fused = rrf_fuse(lists, k=k, weights={name: 1.0 if name == "q" else weight for name in lists})
    if reserved <= 0:
        return fused
    keep: list[int] = []
    for name, ranked in lists.items():
        if name != "q":
            keep.extend(n for n in ranked[:reserved] if n not in keep)
    keep = keep[:k_final]
    keep_set = set(keep)
    head_free = k_final - len(keep)
    rest = [(n, s) for n, s in fused if n not in keep_set]
    head = sorted([(n, s) for n, s in fused if n in keep_set] + rest[:head_free], key=lambda x: -x[1])
    return head + rest[head_free:]


def _validate_ier(max_sub: int) -> Callable[[Any], tuple[bool, list[tuple[str, list[str]]]]]:
    def validate(obj: Any) -> tuple[bool, list[tuple[str, list[str]]]]:
        if not isinstance(obj, dict) or "sufficient" not in obj:
            raise ValueError("ier reply has no 'sufficient' field")
        suff = obj["sufficient"]
        if isinstance(suff, str) and suff.strip().lower() in ("true", "false", "yes", "no"):
            suff = suff.strip().lower() in ("true", "yes")
        if not isinstance(suff, bool):
            raise ValueError("ier 'sufficient' is not a boolean")
        subs_raw = obj.get("sub_queries", [])
        if not isinstance(subs_raw, list):
            raise ValueError("ier 'sub_queries' is not a list")
        subs: list[tuple[str, list[str]]] = []
        for sq in subs_raw:
            if isinstance(sq, str) and sq.strip():
                subs.append((sq.strip(), []))
            elif isinstance(sq, dict) and isinstance(sq.get("query"), str) and sq["query"].strip():
                ents = sq.get("entities", [])
                subs.append(
                    (sq["query"].strip(), [e for e in ents if isinstance(e, str)] if isinstance(ents, list) else [])
                )
        return suff, subs[:max_sub]

    return validate


class Refiner:
    """Runs rounds of retrieval for one question. ``backbone`` None → cheap rule (no LLM)."""

    def __init__(
        self,
        *,
        retriever: Retriever,
        decomposer: Decomposer,
        kindex: KeywordIndex,
        backbone: ChatBackbone | None,
        render: Callable[[int], str],
        cfg: MemCoReConfig,
        switches: Switches,
        seed: int,
    ) -> None:
        self.retriever = retriever
        self.decomposer = decomposer
        self.kindex = kindex
        self.backbone = backbone
        self.render = render
        self.cfg = cfg
        self.sw = switches
        self.seed = seed

    def retrieve(self, query: str, k_final: int) -> RefinedPool:
        plan = self.decomposer.plan(query)
        fallbacks = [plan.fallback] if plan.fallback else []
        first = self.retriever.run(plan, k_final)
        lists: dict[str, list[int]] = {"q": first.ranked}
        channels: dict[int, set[str]] = {n: set(c) for n, c in first.channels.items()}
        pool, scores = first.ranked, dict(first.scores)
        log: list[dict[str, Any]] = [{"round": 1, "plan": plan.to_json()}]
        issued: set[str] = set()  # cheap rule: entities already issued
        seen_queries = {subquery_key(query)}  # LLM judge: sub-queries already run (the question counts)
        searched: list[str] = [plan.query]
        rounds = 1
        stop = "max_rounds" if self.sw.ier and self.cfg.ier_max_rounds > 1 else "off"
        while self.sw.ier and rounds < self.cfg.ier_max_rounds:
            proposed: list[QueryPlan] = []
            if self.backbone is None:
                subs = self._rule(plan, first, pool[:k_final], issued)
                sufficient = not subs
            else:
                sufficient, proposed, fb = self._llm_judge(query, pool[:k_final], searched)
                if fb:
                    fallbacks.append(fb)
                subs = []
                for sq in proposed:
                    if subquery_key(sq.query) not in seen_queries:
                        seen_queries.add(subquery_key(sq.query))
                        subs.append(sq)
            log[-1]["sufficient"] = sufficient
            if sufficient:
                stop = "sufficient"
                break
            if not subs:
                stop = "repeated_subqueries" if proposed else "no_subqueries"
                log[-1]["repeated_subqueries"] = len(proposed)
                break
            rounds += 1
            searched.extend(sq.query for sq in subs)
            entry: dict[str, Any] = {"round": rounds, "sub_queries": [sq.to_json() for sq in subs]}
            for i, sub in enumerate(subs):
                res = self.retriever.run(sub, k_final)
                lists[f"r{rounds}.{i}"] = res.ranked
                for n, c in res.channels.items():
                    channels.setdefault(n, set()).update(c)
            fused = fuse_rounds(
                lists,
                k=self.cfg.rrf_k,
                weight=self.cfg.ier_subquery_weight,
                reserved=self.cfg.ier_reserved,
                k_final=k_final,
            )
            new_pool = [n for n, _ in fused]
            before = set(pool[:k_final])
            added = [n for n in new_pool[:k_final] if n not in before]
            entry["new_in_top_k"] = len(added)
            log.append(entry)
            pool, scores = new_pool, dict(fused)
            if not added:
                stop = "no_new_evidence"
                break
        return RefinedPool(pool, scores, channels, rounds, plan, log, fallbacks, stop, first.ranked)

    def _rule(self, plan: QueryPlan, first: RoundResult, pool: list[int], issued: set[str]) -> list[QueryPlan]:
        pooled_kw = {k for n in pool for k in self.kindex.note_keywords.get(n, [])}
        subs = []
        for ent in plan.entities:
            matched = first.entity_keywords.get(ent, [])
            if ent in issued or not matched or pooled_kw.intersection(matched):
                continue
            issued.add(ent)
            subs.append(QueryPlan(ent, ent, (ent,)))
            if len(subs) >= self.cfg.ier_max_subqueries:
                break
        return subs

    def _llm_judge(self, query: str, pool: list[int], searched: list[str]) -> tuple[bool, list[QueryPlan], str | None]:
        assert self.backbone is not None
        prompt = IER_ANSWER_FIRST_PROMPT if self.cfg.ier_prompt == "answer_first" else IER_PROMPT
        res = complete_json(
            self.backbone,
            [
                {"role": "system", "content": prompt.SYSTEM},
                {
                    "role": "user",
                    "content": prompt.USER.format(
                        question=query,
                        evidence=self.listing(pool),
                        searched="; ".join(f'"{q}"' for q in searched),
                        max_sub=self.cfg.ier_max_subqueries,
                    ),
                },
            ],
            stage="retrieve",
            validate=_validate_ier(self.cfg.ier_max_subqueries),
            fallback=(True, []),
            fallback_kind="ier:stop_refining",
            prompt_version=prompt.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        sufficient, raw_subs = res.value
        subs = []
        for text, ents in raw_subs:
            entities = normalise_keywords(ents, limit=6) or list(cheap_plan(text, self.decomposer.extractor).entities)
            subs.append(QueryPlan(text, text, tuple(entities)))
        return sufficient, subs, None if res.ok else "ier:stop_refining"

    def listing(self, pool: list[int]) -> str:
        """The pool as the judge sees it: whole notes, best first, while they fit ``ier_judge_tokens`` (the
        first note is always shown, cut to the budget if it alone exceeds it)."""
        lines: list[str] = []
        used = 0
        for i, n in enumerate(pool, start=1):
            line = f"[{i}] {self.render(n)}"
            cost = count_tokens(line)
            if lines and used + cost > self.cfg.ier_judge_tokens:
                break
            if not lines and cost > self.cfg.ier_judge_tokens:
                line = truncate_to_tokens(line, self.cfg.ier_judge_tokens)
                cost = self.cfg.ier_judge_tokens
            lines.append(line)
            used += cost
        return "\n".join(lines) or "(none)"
