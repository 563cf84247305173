"""Iterative evidence refinement (IER): judge the pool, issue sub-queries, re-run the channels, ≤ I_max rounds.

Round 1 is the plain tri-pathway retrieval (``ier_max_rounds`` counts it). After each round short of
``ier_max_rounds`` a judge decides whether the pool (its top ``k_final``) suffices; if not, up to
``ier_max_subqueries`` *new* sub-queries re-run the channels (a sub-query already issued in an earlier round is
dropped; when none is new, refinement stops), and the pool becomes the RRF of every round's ranked list
(the question's list has weight 1, each sub-query's ``ier_subquery_weight``). ``ier_reserved`` > 0 also lifts
each sub-query's best notes into the top ``k_final``, so that evidence only a sub-query finds cannot be drowned
by the question's own (longer) list; those reservations never evict the question's best note or a note both of
its channels found, and take at most half of the top (:func:`fuse_rounds`). Refinement also stops when a round
adds no note to the top ``k_final``.

The judge is the LLM in LLM mode: it sees every note of the top ``k_final`` with its dates, each in an equal
share of ``ier_judge_tokens`` (its context and the turns that best match the question,
:mod:`memcore.memory.judge_view`), and the searches already made. A judge reply that does not parse (after its
retry) is not taken as "sufficient": the cheap rule below proposes the sub-queries instead (counted as the
fallback ``ier:rule_subqueries``), and when it has none refinement stops as ``judge_unparsed``. Cheap mode uses
that documented rule throughout: a query entity is *covered* when one of the keywords it matched in memory
(cosine ≥ keyword_min_sim) belongs to a pooled note; the pool suffices when every matchable entity is covered,
otherwise each uncovered entity (not yet issued) becomes a sub-query (topic = entity = the entity text).

Every question's stop reason is logged (``stop``: sufficient | max_rounds | repeated_subqueries |
no_new_evidence | no_subqueries | judge_unparsed) and counted in the system's stats.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcore.fusion import rrf_fuse
from memcore.interfaces import ChatBackbone
from memcore.llm.json_reply import complete_json
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.judge_view import per_note_budget
from memcore.memory.keywords import KeywordIndex, normalise_keywords
from memcore.memory.prompts import ier as IER_PROMPT
from memcore.memory.prompts import ier_answer_first as IER_ANSWER_FIRST_PROMPT
from memcore.memory.retrieval import Decomposer, QueryPlan, Retriever, RoundResult, cheap_plan
from memcore.text import count_tokens


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
    first_topics: list[int] = field(default_factory=list)  # the question's topics (round 1's topic channel)
    first_keywords: list[tuple[int, float]] = field(default_factory=list)  # its matched (keyword id, cosine)


#: The fallback kind of an IER judge reply that did not parse (counted in stats, logged in the item).
JUDGE_FALLBACK = "ier:rule_subqueries"


def subquery_key(text: str) -> str:
    """What makes two sub-queries the same: lower-cased words, punctuation and spacing ignored."""
    return " ".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def protected_notes(first: RoundResult, k_final: int) -> list[int]:
    """The notes of the question's own round that sub-query reservations may never evict: its best note and
    every note of its top ``k_final`` that both channels (topic and keyword) found."""
    top = first.ranked[:k_final]
    dual = [n for n in top if {"topic", "keyword"} <= first.channels.get(n, set())]
    return list(dict.fromkeys(top[:1] + dual))


@dataclass(frozen=True)
class FusedRounds:
    """:func:`fuse_rounds_detail`'s result: the ranking, and what the reservation rule changed in its top
    ``k_final`` against plain RRF: sub-query notes it lifted in, protected notes it kept in."""

    ranked: list[tuple[int, float]]
    lifted: tuple[int, ...] = ()
    kept: tuple[int, ...] = ()


def fuse_rounds_detail(
    lists: dict[str, list[int]],
    *,
    k: int,
    weight: float,
    reserved: int,
    k_final: int,
    protected: Sequence[int] = (),
) -> FusedRounds:
    """RRF over the question's list ``"q"`` (weight 1) and the sub-query lists (``weight``); then, with
    ``reserved`` > 0, each sub-query's best ``reserved`` notes are kept in the top ``k_final`` (lifted into it
    when plain RRF leaves them out).

    Reservations are taken round-robin over the sub-queries (their best notes first), never evict a
    ``protected`` note (:func:`protected_notes`: the question's best note and the notes both its channels found;
    such a note also keeps its place when the sub-queries' RRF shares alone would push it out), and fill at most
    ``k_final // 2`` slots, so the fused ranking always fills at least half of the top. The top ``k_final`` =
    protected ∪ reserved ∪ the best fused rest, in fused-score order. Pure."""
    fused = rrf_fuse(lists, k=k, weights={name: 1.0 if name == "q" else weight for name in lists})
    if reserved <= 0:
        return FusedRounds(fused)
    pos = {n: i for i, (n, _) in enumerate(fused)}
    guard = [n for n in dict.fromkeys(protected) if n in pos][:k_final]
    free = max(0, min(k_final - len(guard), k_final // 2))
    plain = {n for n, _ in fused[:k_final]}
    subs = [ranked for name, ranked in lists.items() if name != "q"]
    keep: list[int] = []
    for depth in range(reserved):
        for ranked in subs:
            if depth < len(ranked) and len(keep) < free:
                n = ranked[depth]
                if n not in guard and n not in keep:
                    keep.append(n)
    chosen = set(guard) | set(keep)
    rest = [(n, s) for n, s in fused if n not in chosen]
    fill = k_final - len(chosen)
    head = sorted([fused[pos[n]] for n in chosen] + rest[:fill], key=lambda x: pos[x[0]])
    return FusedRounds(
        head + rest[fill:],
        lifted=tuple(n for n in keep if n not in plain),
        kept=tuple(n for n in guard if n not in plain),
    )


def fuse_rounds(
    lists: dict[str, list[int]],
    *,
    k: int,
    weight: float,
    reserved: int,
    k_final: int,
    protected: Sequence[int] = (),
) -> list[tuple[int, float]]:
    """The ranking of :func:`fuse_rounds_detail`: (note, score), best first."""
    return fuse_rounds_detail(lists, k=k, weight=weight, reserved=reserved, k_final=k_final, protected=protected).ranked


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
        view: Callable[[int, str, int], str],
        cfg: MemCoReConfig,
        switches: Switches,
        seed: int,
    ) -> None:
        self.retriever = retriever
        self.decomposer = decomposer
        self.kindex = kindex
        self.backbone = backbone
        self.view = view  # (note, question, tokens) → the note as the judge sees it
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
        protected = protected_notes(first, k_final)
        log: list[dict[str, Any]] = [{"round": 1, "plan": plan.to_json()}]
        issued: set[str] = set()  # cheap rule: entities already issued
        seen_queries = {subquery_key(query)}  # LLM judge: sub-queries already run (the question counts)
        searched: list[str] = [plan.query]
        rounds = 1
        stop = "max_rounds" if self.sw.ier and self.cfg.ier_max_rounds > 1 else "off"
        while self.sw.ier and rounds < self.cfg.ier_max_rounds:
            proposed: list[QueryPlan] = []
            unparsed = False
            if self.backbone is None:
                subs = self._rule(plan, first, pool[:k_final], issued)
                sufficient = not subs
            else:
                verdict = self._llm_judge(query, pool[:k_final], searched)
                if verdict is None:
                    # the judge's reply did not parse (after its retries): not "sufficient"; the cheap coverage
                    # rule proposes the sub-queries instead, and with none, refinement stops as judge_unparsed
                    unparsed = True
                    fallbacks.append(JUDGE_FALLBACK)
                    sufficient, proposed = False, self._rule(plan, first, pool[:k_final], issued)
                    log[-1]["judge"] = "unparsed"
                else:
                    sufficient, proposed = verdict
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
                stop = "judge_unparsed" if unparsed else "repeated_subqueries" if proposed else "no_subqueries"
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
            detail = fuse_rounds_detail(
                lists,
                k=self.cfg.rrf_k,
                weight=self.cfg.ier_subquery_weight,
                reserved=self.cfg.ier_reserved,
                k_final=k_final,
                protected=protected,
            )
            fused = detail.ranked
            new_pool = [n for n, _ in fused]
            before = set(pool[:k_final])
            added = [n for n in new_pool[:k_final] if n not in before]
            entry["new_in_top_k"] = len(added)
            if self.cfg.ier_reserved > 0:  # what the reservation rule changed against plain RRF
                entry["reserved_lifted"] = len(detail.lifted)
                entry["protected_kept"] = len(detail.kept)
            log.append(entry)
            pool, scores = new_pool, dict(fused)
            if not added:
                stop = "no_new_evidence"
                break
        return RefinedPool(
            pool,
            scores,
            channels,
            rounds,
            plan,
            log,
            fallbacks,
            stop,
            first.ranked,
            first.topics,
            first.keyword_matches,
        )

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

    def _llm_judge(self, query: str, pool: list[int], searched: list[str]) -> tuple[bool, list[QueryPlan]] | None:
        """The LLM judge's (sufficient, sub-queries), or None when its reply did not parse (after retries)."""
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
                        evidence=self.listing(pool, query),
                        searched="; ".join(f'"{q}"' for q in searched),
                        max_sub=self.cfg.ier_max_subqueries,
                    ),
                },
            ],
            stage="retrieve",
            validate=_validate_ier(self.cfg.ier_max_subqueries),
            fallback=(False, []),  # unused: a failed reply returns None (see the caller)
            fallback_kind=JUDGE_FALLBACK,
            prompt_version=prompt.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        if not res.ok:
            return None
        sufficient, raw_subs = res.value
        subs = []
        for text, ents in raw_subs:
            entities = normalise_keywords(ents, limit=6) or list(cheap_plan(text, self.decomposer.extractor).entities)
            subs.append(QueryPlan(text, text, tuple(entities)))
        return sufficient, subs

    def listing(self, pool: list[int], question: str) -> str:
        """The pool as the judge sees it: every note, best first, each within an equal share of
        ``ier_judge_tokens`` (:func:`~memcore.memory.judge_view.per_note_budget`) showing its context and the
        turns that best match ``question``; notes past the budget (only when the share hits its floor) are left
        out, the first is always shown."""
        share = per_note_budget(self.cfg.ier_judge_tokens, len(pool))
        lines: list[str] = []
        used = 0
        for i, n in enumerate(pool, start=1):
            prefix = f"[{i}] "
            line = prefix + self.view(n, question, share - count_tokens(prefix))
            cost = count_tokens(line)
            if lines and used + cost > self.cfg.ier_judge_tokens:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines) or "(none)"
