"""The FluxMem graph: three node layers (semantic, episodic, skill) and two edge types.

Association edges connect nodes by meaning or use (semantic ↔ semantic similarity, facts of the same
turn, a reshaped unit → the node it refines, an episode → the semantic nodes it used); extraction
edges run from episodes to the skills abstracted from them. Vectors live in one matrix per layer,
row = position in the layer's list. Persisted as JSONL + .npy, like the other snapshots.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.fluxmem.bm25 import BM25
from baselines.turns import load_turns, save_turns
from memcore.types import Turn

ASSOCIATION = "association"
EXTRACTION = "extraction"
EDGE_KINDS = (ASSOCIATION, EXTRACTION)


@dataclass
class SemanticNode:
    """A semantic unit: a chunk of a session's text, a fact or a whole turn. ``origin``: chunk | fact | turn | reshaped;
    a reshaped unit keeps its ``parent`` and the parent's source turns."""

    nid: str
    text: str
    dia_ids: tuple[str, ...]
    speaker: str
    time: str
    origin: str = "fact"
    parent: str | None = None

    def render(self) -> str:
        return f"({self.time}) {self.text}" if self.time else self.text

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SemanticNode:
        return cls(**{**d, "dia_ids": tuple(d["dia_ids"])})


@dataclass
class Episode:
    """One QA episode: the question, the step subgraph finally used, the answer and its self-judged
    outcome (``supported`` is None when it was not judged). ``attributions`` lists the failure cause
    of each refinement round in order."""

    eid: str
    question: str
    answer: str
    semantic_ids: list[str]
    skill_ids: list[str] = field(default_factory=list)
    supported: bool | None = None
    attributions: list[str] = field(default_factory=list)
    rounds: int = 1

    def trajectory(self) -> str:
        """Text whose embedding stands for the episode's trajectory (for clustering)."""
        outcome = "unjudged" if self.supported is None else "supported" if self.supported else "unsupported"
        steps = " -> ".join([*self.attributions, outcome])
        return f"Question: {self.question} | Refinement: {steps} | Answer: {self.answer}"

    def render(self) -> str:
        return f"Q: {self.question} A: {self.answer}"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Episode:
        return cls(**d)


@dataclass
class Skill:
    """A procedure abstracted from a cluster of episodes; ``history`` holds one PEMS record per
    version tried (accepted or not)."""

    kid: str
    text: str
    episodes: list[str]
    version: int = 0
    pems: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Skill:
        return cls(**d)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    kind: str
    weight: float = 1.0
    label: str = ""


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


class FluxGraph:
    """Layers, vectors, edges and the BM25 index over semantic nodes. Not thread-safe by itself
    (the memory system serialises access)."""

    def __init__(self, bm25_k1: float = 1.5, bm25_b: float = 0.75) -> None:
        self.turns: dict[str, Turn] = {}
        self.semantic: list[SemanticNode] = []
        self.episodes: list[Episode] = []
        self.skills: list[Skill] = []
        self.edges: list[Edge] = []
        self.sem_vecs = _empty(0)
        self.ep_q_vecs = _empty(0)
        self.ep_traj_vecs = _empty(0)
        self.skill_vecs = _empty(0)
        self._k1, self._b = bm25_k1, bm25_b
        self.bm25 = BM25(bm25_k1, bm25_b)
        self._row: dict[str, int] = {}
        self._assoc: dict[str, dict[str, float]] = {}
        self._extract: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ semantic layer
    def new_semantic_id(self) -> str:
        return f"s{len(self.semantic)}"

    def add_semantic(self, node: SemanticNode, vec: np.ndarray | None = None) -> None:
        """Append a node (its vector too once the layer is embedded) and index it for BM25."""
        if node.nid in self._row:
            raise ValueError(f"semantic node {node.nid} exists")
        self._row[node.nid] = len(self.semantic)
        self.semantic.append(node)
        self.bm25.add(node.text)
        if vec is not None:
            self.sem_vecs = np.vstack([self._fit(self.sem_vecs, vec), vec[None, :].astype(np.float32)])

    def set_semantic_vectors(self, vecs: np.ndarray) -> None:
        if len(vecs) != len(self.semantic):
            raise ValueError(f"{len(vecs)} vectors for {len(self.semantic)} semantic nodes")
        self.sem_vecs = np.asarray(vecs, dtype=np.float32)

    def node(self, nid: str) -> SemanticNode:
        return self.semantic[self._row[nid]]

    def row(self, nid: str) -> int:
        return self._row[nid]

    # ------------------------------------------------------------------ episodes and skills
    def add_episode(self, ep: Episode, q_vec: np.ndarray, traj_vec: np.ndarray) -> None:
        self.episodes.append(ep)
        self.ep_q_vecs = np.vstack([self._fit(self.ep_q_vecs, q_vec), q_vec[None, :].astype(np.float32)])
        self.ep_traj_vecs = np.vstack([self._fit(self.ep_traj_vecs, traj_vec), traj_vec[None, :].astype(np.float32)])
        for nid in ep.semantic_ids:
            self.add_edge(Edge(ep.eid, nid, ASSOCIATION, 1.0, "used"))

    def add_skill(self, skill: Skill, vec: np.ndarray) -> None:
        self.skills.append(skill)
        self.skill_vecs = np.vstack([self._fit(self.skill_vecs, vec), vec[None, :].astype(np.float32)])
        for eid in skill.episodes:
            self.add_edge(Edge(eid, skill.kid, EXTRACTION, 1.0, "extracted"))

    def skill(self, kid: str) -> Skill:
        return next(s for s in self.skills if s.kid == kid)

    def skills_of(self, eid: str) -> list[str]:
        """Skills reached from an episode by extraction edges."""
        return list(self._extract.get(eid, []))

    def consolidated(self, eid: str) -> bool:
        return eid in self._extract

    # ------------------------------------------------------------------ edges
    def add_edge(self, edge: Edge) -> None:
        if edge.kind not in EDGE_KINDS:
            raise ValueError(f"unknown edge kind {edge.kind!r}; known: {', '.join(EDGE_KINDS)}")
        self.edges.append(edge)
        self._index_edge(edge)

    def _index_edge(self, edge: Edge) -> None:
        if edge.kind == EXTRACTION:
            self._extract.setdefault(edge.src, []).append(edge.dst)
        elif edge.src in self._row and edge.dst in self._row:  # semantic ↔ semantic, undirected
            for a, b in ((edge.src, edge.dst), (edge.dst, edge.src)):
                nb = self._assoc.setdefault(a, {})
                nb[b] = max(nb.get(b, 0.0), edge.weight)

    def neighbours(self, nid: str) -> dict[str, float]:
        """Semantic association neighbours of a semantic node with their edge weight."""
        return dict(self._assoc.get(nid, {}))

    def build_associations(self, k: int, min_sim: float) -> int:
        """Link facts of the same turn (weight 1) and each node to its ``k`` most similar nodes with
        cosine ≥ ``min_sim``; returns the number of edges added."""
        added = 0
        by_turn: dict[tuple[str, ...], list[str]] = {}
        for node in self.semantic:
            by_turn.setdefault(node.dia_ids, []).append(node.nid)
        for ids in by_turn.values():
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    self.add_edge(Edge(a, b, ASSOCIATION, 1.0, "same_turn"))
                    added += 1
        n = len(self.semantic)
        if k == 0 or n < 2:
            return added
        sims = self.sem_vecs @ self.sem_vecs.T
        np.fill_diagonal(sims, -np.inf)
        seen: set[tuple[str, str]] = set()
        for i in range(n):
            order = np.argsort(-sims[i], kind="stable")[:k]
            for j in order:
                if sims[i, j] < min_sim:
                    break
                a, b = self.semantic[i].nid, self.semantic[int(j)].nid
                pair = (a, b) if a < b else (b, a)
                if pair in seen or self.semantic[i].dia_ids == self.semantic[int(j)].dia_ids:
                    continue
                seen.add(pair)
                self.add_edge(Edge(pair[0], pair[1], ASSOCIATION, round(float(sims[i, j]), 6), "similar"))
                added += 1
        return added

    # ------------------------------------------------------------------ persistence
    @staticmethod
    def _fit(matrix: np.ndarray, vec: np.ndarray) -> np.ndarray:
        """An empty matrix takes the width of its first vector."""
        return _empty(vec.shape[-1]) if matrix.shape[0] == 0 else matrix

    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        save_turns(list(self.turns.values()), path / "turns.jsonl")
        _write_jsonl(path / "semantic.jsonl", [asdict(n) for n in self.semantic])
        _write_jsonl(path / "episodes.jsonl", [asdict(e) for e in self.episodes])
        _write_jsonl(path / "skills.jsonl", [asdict(s) for s in self.skills])
        _write_jsonl(path / "edges.jsonl", [asdict(e) for e in self.edges])
        for name, mat in (
            ("semantic", self.sem_vecs),
            ("episodes_question", self.ep_q_vecs),
            ("episodes_trajectory", self.ep_traj_vecs),
            ("skills", self.skill_vecs),
        ):
            np.save(path / f"{name}.npy", np.asarray(mat, dtype=np.float32))

    @classmethod
    def load(cls, path: Path, bm25_k1: float = 1.5, bm25_b: float = 0.75) -> FluxGraph:
        g = cls(bm25_k1, bm25_b)
        g.turns = {t.dia_id: t for t in load_turns(path / "turns.jsonl")}
        for d in _read_jsonl(path / "semantic.jsonl"):
            g.add_semantic(SemanticNode.from_json(d))
        g.sem_vecs = np.load(path / "semantic.npy")
        g.episodes = [Episode.from_json(d) for d in _read_jsonl(path / "episodes.jsonl")]
        g.skills = [Skill.from_json(d) for d in _read_jsonl(path / "skills.jsonl")]
        g.ep_q_vecs = np.load(path / "episodes_question.npy")
        g.ep_traj_vecs = np.load(path / "episodes_trajectory.npy")
        g.skill_vecs = np.load(path / "skills.npy")
        for d in _read_jsonl(path / "edges.jsonl"):
            g.add_edge(Edge(**d))
        if (
            len(g.sem_vecs) != len(g.semantic)
            or len(g.ep_q_vecs) != len(g.episodes)
            or len(g.skill_vecs) != len(g.skills)
        ):
            raise ValueError(f"fluxmem snapshot {path} is inconsistent (vector rows do not match nodes); rebuild it.")
        return g


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
