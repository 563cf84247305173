"""Iterative evidence refinement (IER): judge the pool, issue sub-queries, re-run the channels, ≤ I_max rounds.

Round 1 is the plain tri-pathway retrieval. After each round short of ``ier_max_rounds`` a judge decides
whether the pool (its top ``k_final``) suffices; if not, up to ``ier_max_subqueries`` sub-queries re-run the
channels, and the pool becomes the RRF of every round's ranked list (the first query's list included, so
its evidence is never simply replaced).

The judge is the LLM in LLM mode. Cheap mode uses a documented rule instead: a query entity is *covered*
when one of the keywords it matched in memory (cosine ≥ keyword_min_sim) belongs to a pooled note; the
pool suffices when every matchable entity is covered, otherwise each uncovered entity (not yet issued)
becomes a sub-query (topic = entity = the entity text).
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
from memcore.text import truncate_to_tokens

NOTE_TOKENS_IN_JUDGE = 80


@dataclass
class RefinedPool:
    ranked: list[int]
    scores: dict[int, float]
    channels: dict[int, set[str]]
    rounds: int
    plan: QueryPlan
    log: list[dict[str, Any]] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)


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
        issued: set[str] = set()
        rounds = 1
        while self.sw.ier and rounds < self.cfg.ier_max_rounds:
            if self.backbone is None:
                subs = self._rule(plan, first, pool[:k_final], issued)
                sufficient = not subs
            else:
                sufficient, subs, fb = self._llm_judge(query, pool[:k_final])
                if fb:
                    fallbacks.append(fb)
            log[-1]["sufficient"] = sufficient
            if sufficient or not subs:
                break
            rounds += 1
            entry: dict[str, Any] = {"round": rounds, "sub_queries": [s.to_json() for s in subs]}
            for i, sub in enumerate(subs):
                res = self.retriever.run(sub, k_final)
                lists[f"r{rounds}.{i}"] = res.ranked
                for n, c in res.channels.items():
                    channels.setdefault(n, set()).update(c)
            log.append(entry)
            weights = {name: 1.0 if name == "q" else self.cfg.ier_subquery_weight for name in lists}
            fused = rrf_fuse(lists, k=self.cfg.rrf_k, weights=weights)
            pool, scores = [n for n, _ in fused], dict(fused)
        return RefinedPool(pool, scores, channels, rounds, plan, log, fallbacks)

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

    def _llm_judge(self, query: str, pool: list[int]) -> tuple[bool, list[QueryPlan], str | None]:
        assert self.backbone is not None
        listing = "\n".join(
            f"[{i}] {truncate_to_tokens(self.render(n), NOTE_TOKENS_IN_JUDGE)}" for i, n in enumerate(pool, start=1)
        )
        res = complete_json(
            self.backbone,
            [
                {"role": "system", "content": IER_PROMPT.SYSTEM},
                {
                    "role": "user",
                    "content": IER_PROMPT.USER.format(
                        question=query, evidence=listing or "(none)", max_sub=self.cfg.ier_max_subqueries
                    ),
                },
            ],
            stage="retrieve",
            validate=_validate_ier(self.cfg.ier_max_subqueries),
            fallback=(True, []),
            fallback_kind="ier:stop_refining",
            prompt_version=IER_PROMPT.VERSION,
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
