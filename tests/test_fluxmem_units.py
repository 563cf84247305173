"""FluxMem pure pieces: BM25, fusion maths, verdict parsing, edit choices, clustering, PEMS loop, config."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from baselines.fluxmem.bm25 import BM25, tokenize
from baselines.fluxmem.chunking import split_spans, split_text
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.consolidate import (
    PEMSWeights,
    VersionScore,
    cluster_by_similarity,
    pems,
    pems_upstream,
    refine_skill,
    refine_until_converged,
)
from baselines.fluxmem.refine import (
    GRANULARITY,
    OVER,
    UNDER,
    expansion_candidates,
    parse_verdict,
    prune_choice,
    reshape_choice,
)
from baselines.fluxmem.relevance import StepSubgraph, fuse, max_scale, minmax, top_indices
from experiments.benchmarks.fluxmem_units import summarize
from memcore.config import ConfigError
from tests.support import REPO


# ---------------------------------------------------------------- BM25
def test_bm25_matches_hand_computation() -> None:
    bm = BM25(k1=1.5, b=0.75)
    for text in ("apple banana", "the apple", "cherry"):
        bm.add(text)
    s = bm.scores("Apple?")
    # N=3, df(apple)=2 → idf = ln(1 + 1.5/2.5) = ln 1.6; |d| = 2, 1 ("the" is a stop word), 1; avgdl = 4/3
    idf = math.log(1.6)
    norm0 = 1.5 * (0.25 + 0.75 * 2 / (4 / 3))
    norm1 = 1.5 * (0.25 + 0.75 * 1 / (4 / 3))
    assert s[0] == pytest.approx(idf * 2.5 / (1 + norm0))
    assert s[1] == pytest.approx(idf * 2.5 / (1 + norm1))
    assert s[2] == 0.0
    assert tokenize("The apple, AND a Banana!") == ["apple", "banana"]


def test_bm25_incremental_add_changes_idf() -> None:
    bm = BM25()
    bm.add("violin lessons")
    assert bm.scores("violin")[0] == pytest.approx(math.log(1 + 0.5 / 1.5) * 2.5 / (1 + 1.5))
    bm.add("piano")
    # N=2, df=1 → idf = ln(1 + 1.5/1.5) = ln 2; lengths 2, 1 → avgdl 1.5
    norm = 1.5 * (0.25 + 0.75 * 2 / 1.5)
    assert bm.scores("violin")[0] == pytest.approx(math.log(2) * 2.5 / (1 + norm))
    assert len(bm) == 2


# ---------------------------------------------------------------- fusion
def test_normalisers() -> None:
    assert minmax(np.array([0.2, 0.6, 1.0])).tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert minmax(np.array([0.3, 0.3])).tolist() == [0.0, 0.0]
    assert max_scale(np.array([0.0, 2.0, 4.0])).tolist() == pytest.approx([0.0, 0.5, 1.0])
    assert max_scale(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_fuse_weighted_with_and_without_llm() -> None:
    d = np.array([0.0, 0.5, 1.0])
    s = np.array([0.0, 0.5, 1.0])
    v = np.array([1.0, 0.0, 1.0])
    with_llm = fuse(d, s, v, w_dense=0.4, w_sparse=0.3, w_llm=0.3)
    assert with_llm.tolist() == pytest.approx([0.3, 0.35, 1.0])
    without = fuse(d, s, None, w_dense=0.4, w_sparse=0.3, w_llm=0.3)
    assert without.tolist() == pytest.approx([0.0, 0.5, 1.0])
    # w_llm = 0 ignores the verification entirely
    assert fuse(d, s, v, w_dense=0.4, w_sparse=0.3, w_llm=0.0).tolist() == pytest.approx(without.tolist())
    # the LLM term can overturn the dense+sparse order
    flipped = fuse(
        np.array([1.0, 0.8]), np.array([1.0, 0.8]), np.array([0.0, 1.0]), w_dense=0.4, w_sparse=0.3, w_llm=0.3
    )
    assert flipped.tolist() == pytest.approx([0.7, 0.86])


def test_top_indices_ties_and_subset() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1])
    assert top_indices(scores, 3) == [1, 0, 2]
    assert top_indices(scores, 2, np.array([3, 2, 0])) == [0, 2]
    assert top_indices(scores, 0) == []


# ---------------------------------------------------------------- Stage 2 pieces
def test_parse_verdict_infers_failure_and_filters_numbers() -> None:
    v = parse_verdict({"supported": False, "failure": "bogus", "distracting": ["2", 9, "x"]}, n_facts=3)
    assert (v.supported, v.failure, v.distracting) == (False, OVER, (2,))
    assert parse_verdict({"supported": "no", "reshape": [1, 1]}, 3).failure == GRANULARITY
    assert parse_verdict({"supported": False, "missing": "the date"}, 3).failure == UNDER
    ok = parse_verdict({"supported": "true", "failure": "under_connection"}, 3)
    assert (ok.supported, ok.failure) == (True, "none")
    assert parse_verdict({"supported": False, "failure": "Over-Connection"}, 3).failure == OVER
    with pytest.raises(ValueError):
        parse_verdict({"failure": "under_connection"}, 3)
    with pytest.raises(ValueError):
        parse_verdict({"supported": "maybe"}, 3)


def _sub(weights: dict[str, float]) -> StepSubgraph:
    sub = StepSubgraph("q")
    for nid, w in weights.items():
        sub.link(nid, w, ("dense",))
    return sub


def test_prune_and_reshape_choices() -> None:
    sub = _sub({"a": 0.9, "b": 0.5, "c": 0.7, "d": 0.1})
    order = sub.ordered()
    assert order == ["a", "c", "b", "d"]
    assert prune_choice(sub, order, (2,), prune_n=2, min_keep=1) == ["c"]
    assert prune_choice(sub, order, (), prune_n=2, min_keep=1) == ["d", "b"]
    assert prune_choice(sub, order, (1, 2, 3), prune_n=2, min_keep=3) == ["a"]  # room for one only
    assert reshape_choice(order, (), reshape_n=1) == ["a"]
    assert reshape_choice(order, (4, 2), reshape_n=1) == ["d"]
    sub.replace("c", "c2")
    assert (
        sub.ordered() == ["a", "c2", "b", "d"]
        and sub.reshaped == {"c": "c2"}
        and sub.channels["c2"] == ("dense", "reshaped")
    )


def test_expansion_adds_unactivated_nodes_with_association_bonus() -> None:
    sub = _sub({"a": 1.0})
    ids = ["a", "b", "c", "d"]
    pre = np.array([1.0, 0.30, 0.40, 0.35])
    neighbours = {"a": {"b": 0.6}}
    got = expansion_candidates(sub, ids, pre, neighbours, n=2, assoc_bonus=0.2, excluded={"d"})
    # b: 0.30 + 0.2·0.6 = 0.42 beats c: 0.40; d is excluded, a is already active
    assert [n for n, _ in got] == ["b", "c"]
    assert got[0][1] == pytest.approx(0.42)


# ---------------------------------------------------------------- Stage 3 pieces
def test_pems_formula() -> None:
    w = PEMSWeights(success=1.0, length=0.2, drift=0.3, length_ref=120)
    assert pems(0.5, 60, 0.1, w) == pytest.approx(0.5 - 0.1 - 0.03)
    assert pems(1.0, 480, 0.0, w) == pytest.approx(0.8)  # length penalty saturates at 1


def test_clustering_by_similarity() -> None:
    v = np.array([[1.0, 0.0], [0.96, 0.28], [0.0, 1.0], [0.28, 0.96]])
    assert cluster_by_similarity(v, 0.9) == [[0, 1], [2, 3]]
    assert cluster_by_similarity(v, 0.99) == [[0], [1], [2], [3]]
    assert cluster_by_similarity(v, -1.0) == [[0, 1, 2, 3]]


def _version(text: str, score: float) -> VersionScore:
    return VersionScore(text, np.zeros(2), score, 1, 0.0, score)


def test_refine_skill_stops_when_gain_below_threshold() -> None:
    scores = {"v1": 0.5, "v2": 0.55, "v3": 0.9}
    texts = iter(["v1", "v2", "v3"])
    out = refine_skill(
        _version("v0", 0.1),
        lambda cur: next(texts),
        lambda text, prev: _version(text, scores[text]),
        threshold=0.1,
        target=0.95,
        max_iters=5,
    )
    # v1 gains 0.4 (kept, go on); v2 gains 0.05 < 0.1 (kept since > 0, then stop); v3 never tried
    assert out.best.text == "v2" and out.version == 2 and out.rewrites == 2
    assert [h["pems"] for h in out.history] == [0.1, 0.5, 0.55]
    assert [h["accepted"] for h in out.history] == [True, True, True]


def test_refine_skill_rejects_worse_rewrite_honours_target_and_max_iters() -> None:
    worse = refine_skill(
        _version("v0", 0.5), lambda cur: "w", lambda t, p: _version(t, 0.2), threshold=0.01, target=0.9, max_iters=3
    )
    assert worse.best.text == "v0" and worse.rewrites == 1 and worse.history[-1]["accepted"] is False
    mature = refine_skill(
        _version("v0", 0.95), lambda cur: "x", lambda t, p: _version(t, 1.0), threshold=0.0, target=0.9, max_iters=3
    )
    assert mature.rewrites == 0 and mature.best.text == "v0"
    counter = iter(range(100))
    capped = refine_skill(
        _version("v0", 0.0),
        lambda cur: f"v{next(counter)}",
        lambda t, p: _version(t, p.sum() + 0.3 if p is not None else 0.0),
        threshold=0.0,
        target=10.0,
        max_iters=2,
    )
    assert capped.rewrites == 2
    assert (
        refine_skill(
            _version("v0", 0.0), lambda cur: None, lambda t, p: _version(t, 1.0), threshold=0, target=1, max_iters=3
        ).rewrites
        == 1
    )


# ---------------------------------------------------------------- config
def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key.*top_kk"):
        FluxMemConfig.from_dict({"top_kk": 3})
    with pytest.raises(ConfigError, match="T must be an integer"):
        FluxMemConfig.from_dict({"T": 1.5})
    with pytest.raises(ConfigError, match="refine must be true or false"):
        FluxMemConfig.from_dict({"refine": "yes"})
    with pytest.raises(ConfigError, match="verify_pool"):
        FluxMemConfig.from_dict({"k": 30, "verify_pool": 20})
    with pytest.raises(ConfigError, match="w_dense"):
        FluxMemConfig.from_dict({"w_dense": -0.1})
    assert FluxMemConfig.from_dict({"w_llm": 1}).w_llm == 1.0


def test_yaml_configs_mirror_the_dataclass() -> None:
    base = yaml.safe_load((REPO / "configs/method/fluxmem.yaml").read_text())
    assert base["note_cap"] == "${eval.note_cap}"  # resolved by Hydra (null unless eval.note_cap is set)
    cfg = FluxMemConfig.from_dict({**base, "note_cap": None})
    assert cfg == FluxMemConfig()  # every default in the YAML equals the code's
    assert set(base) == {f for f in FluxMemConfig.__dataclass_fields__}
    for name, key in (("fluxmem-no-refine", "refine"), ("fluxmem-no-consolidate", "consolidate")):
        variant = yaml.safe_load((REPO / f"configs/method/{name}.yaml").read_text())
        assert variant["defaults"] == ["fluxmem", "_self_"]
        assert variant["name"] == name and variant[key] is False
        assert set(variant) == {"defaults", "name", key}


# ---------------------------------------------------------------- upstream alignment
def test_upstream_pems_formula() -> None:
    """metrics/pems.py: S / (|V_proc| · ln(words)) · (1 − drift); a one-word skill scores 0."""
    assert pems_upstream(1.0, 1, 100, 0.0) == pytest.approx(1.0 / math.log(100))
    assert pems_upstream(0.5, 2, 20, 0.1) == pytest.approx(0.5 / (2 * math.log(20)) * 0.9)
    assert pems_upstream(1.0, 0, 20, 0.0) == pytest.approx(1.0 / math.log(20))  # |V_proc| at least 1
    assert pems_upstream(1.0, 1, 1, 0.0) == 0.0 and pems_upstream(1.0, 1, 0, 0.0) == 0.0


def test_refine_until_converged_follows_upstreams_loop() -> None:
    """Round k scores version k; stop at |ΔPEMS| < ε or after `rounds` scores; a rewrite always replaces."""
    scores = {"v1": 0.2, "v2": 0.205, "v3": 0.9}
    texts = iter(["v1", "v2", "v3"])
    out = refine_until_converged(
        _version("v0", 0.5), lambda cur: next(texts), lambda t, p: _version(t, scores[t]), threshold=0.01, rounds=5
    )
    # v1 is worse than v0 and still replaces it; v2 moves PEMS by 0.005 < 0.01: converged
    assert out.best.text == "v2" and out.version == 2 and out.rewrites == 2
    assert [h["pems"] for h in out.history] == [0.5, 0.2, 0.205]
    counter = iter(range(100))
    capped = refine_until_converged(
        _version("v0", 0.0),
        lambda cur: f"v{next(counter)}",
        lambda t, p: _version(t, float(len(t))),
        threshold=0.0,
        rounds=3,
    )
    assert capped.rewrites == 2 and len(capped.history) == 3  # 3 scores = 3 rounds
    assert (
        refine_until_converged(
            _version("v0", 0.0), lambda c: "x", lambda t, p: _version(t, 0), threshold=1, rounds=1
        ).rewrites
        == 0
    )


def test_defaults_follow_upstream_fluxmemconfig() -> None:
    cfg = FluxMemConfig()
    assert (cfg.k, cfg.k_episodes, cfg.T, cfg.pems_threshold, cfg.pems_rounds) == (5, 3, 5, 0.01, 5)
    assert (cfg.w_dense, cfg.w_sparse, cfg.w_llm) == (1.0, 0.5, 0.3)
    assert (cfg.pool_by, cfg.normalize_over, cfg.pems_formula, cfg.verify_pool, cfg.expand_n) == (
        "dense",
        "pool",
        "upstream",
        15,
        3,
    )
    assert (cfg.temperature_verify, cfg.temperature_check, cfg.temperature_skill_refine) == (0.1, 0.2, 0.5)
    # upstream's units (add_knowledge chunk_size 512) and its graded per-candidate verification
    assert (cfg.unit, cfg.chunk_chars, cfg.verify_mode) == ("chunk", 512, "graded")
    with pytest.raises(ConfigError, match="unit"):
        FluxMemConfig.from_dict({"unit": "sentence"})
    with pytest.raises(ConfigError, match="pems_formula"):
        FluxMemConfig.from_dict({"pems_formula": "mine"})
    with pytest.raises(ConfigError, match="pool_by"):
        FluxMemConfig.from_dict({"pool_by": "bm25"})


def test_split_text_follows_upstreams_rules_by_hand() -> None:
    assert split_text("  short  ", 512) == ["  short  "]  # a text that fits is one chunk, as is
    assert split_text("", 512) == []
    # window 10, boundaries searched in [7, 10): "\n\n" is preferred to a later "." ...
    assert split_text("abcdefg\n\nh.ijklmnop", 10) == ["abcdefg", "h.ijklmnop"]
    # ... a boundary before 70 % of the window is not used: hard cut at 10
    assert split_text("ab.cdefghijklmno", 10) == ["ab.cdefghi", "jklmno"]
    # the last occurrence of the first separator kind found wins (window 11: "." at 7 and 9, cut after 9)
    assert split_text("abcdefg.h.ijkl", 11) == ["abcdefg.h.", "ijkl"]
    # chunks are stripped, no overlap; no boundary in [15, 18): hard cut at 18
    assert split_text("abcdefg. h. ijklmnopq", 10) == ["abcdefg.", "h. ijklmn", "opq"]
    text = "abcdefg. h. ijklmnopq"
    assert all(text[a:b] == c for (a, b), c in zip(split_spans(text, 10), split_text(text, 10)))


def test_committed_fluxmem_units_numbers_re_derive_from_their_items() -> None:
    """results/measured/fluxmem_units: every summary number recomputes from the committed per-item records."""
    import gzip
    import json
    import re
    from pathlib import Path

    where = Path(__file__).resolve().parents[1] / "results" / "measured" / "fluxmem_units"
    summary = json.loads((where / "summary.json").read_text())
    with gzip.open(where / "items.jsonl.gz", "rt", encoding="utf-8") as fh:
        items = [json.loads(line) for line in fh]
    settings = {(r["unit"], r["setting"]) for r in items}
    assert {u for u, _ in settings} == {"turn", "chunk"} and len(settings) == 10
    n_qa = int(re.search(r"(\d[\d,]*) QA", summary["dataset"]).group(1).replace(",", ""))
    for unit, setting in sorted(settings):
        rows = [r for r in items if r["unit"] == unit and r["setting"] == setting]
        assert len(rows) == n_qa  # every question of the conversations measured
        assert summarize(rows) == summary[unit][setting], (unit, setting)
        assert all(r["tokens"] <= int(setting[3:]) for r in rows if setting.startswith("tok"))
