"""FluxMem Stage 3 over the graph (consolidation): cluster the episodes no skill was extracted from, extract
one skill per large enough cluster and refine it by PEMS, re-running its source episodes with each version.
Clustering, the PEMS scores and the refine loops (no LLM) are in ``consolidate.py``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.fluxmem import consolidate as c3
from baselines.fluxmem import prompts as P
from baselines.fluxmem.calls import FluxCalls, validate_rerun, validate_text
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.graph import Episode, FluxGraph, Skill
from memcore.text import count_tokens


@dataclass(frozen=True)
class SkillBuilder:
    """Stage 3 for one FluxMem; new skills (and their extraction edges) are added to ``graph``."""

    cfg: FluxMemConfig
    calls: FluxCalls

    def consolidate(self, graph: FluxGraph) -> list[str]:
        """Cluster the episodes no skill was extracted from by trajectory similarity; extract one skill
        per cluster of at least ``min_cluster_size`` and refine it by PEMS. Returns the new skill ids."""
        pending = [i for i, ep in enumerate(graph.episodes) if not graph.consolidated(ep.eid)]
        self.calls.counters["consolidations"] += 1
        if len(pending) < self.cfg.min_cluster_size:
            return []
        clusters = c3.cluster_by_similarity(graph.ep_traj_vecs[pending], self.cfg.cluster_min_sim)
        made: list[str] = []
        for cluster in clusters:
            if len(cluster) < self.cfg.min_cluster_size:
                continue
            members = [graph.episodes[pending[j]] for j in cluster]
            kid = self._make_skill(graph, members)
            if kid is not None:
                made.append(kid)
        return made

    def _make_skill(self, graph: FluxGraph, members: list[Episode]) -> str | None:
        """Extract a skill from ``members``, refine it by PEMS and add the best version; None when the
        extraction reply was unusable."""
        cfg = self.cfg
        shown = members[: cfg.max_cluster_episodes]
        listing = "\n".join(
            f"- Q: {e.question} | refinement: {', '.join(e.attributions) or 'none'} | A: {e.answer} | "
            f"supported: {'unknown' if e.supported is None else 'yes' if e.supported else 'no'}"
            for e in shown
        )
        res = self.calls.json(
            "skill_extract",
            "ingest",
            P.SKILL_EXTRACT_SYSTEM,
            P.SKILL_EXTRACT_USER.format(episodes=listing, max_words=cfg.skill_max_words),
            validate=validate_text("skill"),
            fallback=None,
            fallback_kind="no skill for this cluster",
            max_tokens=320,
        )
        if res.value is None:
            return None
        rerun = shown[: cfg.rerun_episodes]
        weights = c3.PEMSWeights(cfg.pems_w_success, cfg.pems_w_length, cfg.pems_w_drift, cfg.pems_length_ref)

        n_skills = len(graph.skills) + 1  # upstream's |V_proc| counts the skill being consolidated

        def evaluate(text: str, prev_vec: np.ndarray | None) -> c3.VersionScore:
            vec = self.calls.embed([text])[0]
            drift = 0.0 if prev_vec is None else float(1.0 - np.clip(vec @ prev_vec, -1.0, 1.0))
            results = tuple(self._rerun(graph, text, ep) for ep in rerun)
            judged = [r[2] for r in results if r[2] is not None]
            success = sum(judged) / len(judged) if judged else 0.0
            if cfg.pems_formula == "upstream":
                words = len(text.split())
                score = c3.pems_upstream(success, n_skills, words, drift)
                return c3.VersionScore(text, vec, success, words, drift, score, results)
            tokens = count_tokens(text)
            return c3.VersionScore(text, vec, success, tokens, drift, c3.pems(success, tokens, drift, weights), results)

        def rewrite(cur: c3.VersionScore) -> str | None:
            lines = "\n".join(
                f"- Q: {q} | A: {a} | {'supported' if ok else 'unknown' if ok is None else 'NOT supported'}"
                for q, a, ok in cur.results
            )
            out = self.calls.json(
                "skill_refine",
                "ingest",
                P.SKILL_REFINE_SYSTEM,
                P.SKILL_REFINE_USER.format(
                    score=cur.score,
                    success=cur.success,
                    tokens=cur.tokens,
                    skill=cur.text,
                    results=lines,
                    max_words=cfg.skill_max_words,
                ),
                validate=validate_text("skill"),
                fallback=None,
                fallback_kind="keep the current skill version",
                max_tokens=320,
            )
            return out.value

        if cfg.pems_formula == "upstream":
            outcome = c3.refine_until_converged(
                evaluate(res.value, None), rewrite, evaluate, threshold=cfg.pems_threshold, rounds=cfg.pems_rounds
            )
        else:
            outcome = c3.refine_skill(
                evaluate(res.value, None),
                rewrite,
                evaluate,
                threshold=cfg.pems_threshold,
                target=cfg.pems_target,
                max_iters=cfg.pems_max_iters,
            )
        self.calls.counters["skill_rewrites"] += outcome.rewrites
        skill = Skill(
            f"k{len(graph.skills)}",
            outcome.best.text,
            [e.eid for e in members],
            outcome.version,
            round(outcome.best.score, 6),
            outcome.history,
        )
        graph.add_skill(skill, outcome.best.vec)
        return skill.kid

    def _rerun(self, graph: FluxGraph, skill: str, ep: Episode) -> tuple[str, str, bool | None]:
        """Re-run a source episode with the skill: (question, answer, self-judged success or None)."""
        facts = "\n".join(f"[{i + 1}] {graph.node(n).render()}" for i, n in enumerate(ep.semantic_ids[: self.cfg.k]))
        res = self.calls.json(
            "skill_rerun",
            "ingest",
            P.SKILL_RERUN_SYSTEM,
            P.SKILL_RERUN_USER.format(skill=skill, facts=facts or "(none)", question=ep.question),
            validate=validate_rerun,
            fallback=None,
            fallback_kind="re-run outcome unknown (left out of the success rate)",
            max_tokens=128,
        )
        if res.value is None:
            return ep.question, "", None
        return ep.question, res.value[0], res.value[1]
