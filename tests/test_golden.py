"""Golden behaviour: every method on the scripted backbone and the hashing embedder over a LoCoMo slice,
``items.jsonl`` and ``metrics.json`` pinned (timings, paths and host-dependent fields removed; free text is
stored as its hash, so no LoCoMo content is committed).

This test guards refactors: a change that moves code without changing behaviour leaves every
golden file as it is. A deliberate behaviour change regenerates them:

    MEMCORE_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_golden.py

and the commit says which behaviour changed. The scripted backbone is content-free (``echo_responder``: every
JSON prompt falls back in its counted way), so the golden files pin the pipeline, the retrieval structures and
the fallbacks, not model quality."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from memcore.itemlog import read_items
from memcore.methods import method_names
from memcore.runner import run_config
from tests.support import compose_run

GOLDEN_DIR = Path(__file__).parent / "golden"
METHODS = method_names()
SLICE = ["dataset=locomo-tiny", "dataset.max_qa=4", "embedder=hashing", "backbone=scripted", "concurrency=1"]
#: Keys whose values depend on the clock, the host or the run dir, never on behaviour.
VOLATILE = re.compile(r"(latency|seconds|elapsed|wall|time_s|_s$|started|finished|created|path|dir$|host|pid)")
#: Identifier-like strings (dia_ids, names, prompt versions) stay readable; any other text (questions, answers,
#: note text: LoCoMo content, which is never committed) is pinned by its hash.
IDENTIFIER = re.compile(r"^[A-Za-z0-9_:#.\-]{0,64}$")


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in sorted(value.items()) if not VOLATILE.search(str(k))}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str) and not IDENTIFIER.match(value):
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]
    return value


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("method", METHODS)
def test_method_matches_its_golden_run(method: str, tmp_path: Path) -> None:
    cfg = compose_run(tmp_path, [*SLICE, f"method={method}"])
    run_config(cfg, tmp_path / "run")
    got = {
        "items": [_stable(r) for r in read_items(tmp_path / "run" / "items.jsonl")],
        "metrics": _stable(json.loads((tmp_path / "run" / "metrics.json").read_text())),
    }
    golden = GOLDEN_DIR / f"{method}.json"
    if os.environ.get("MEMCORE_UPDATE_GOLDEN") == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        golden.write_text(json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    if not golden.is_file():
        pytest.fail(f"{golden} is missing: generate it with MEMCORE_UPDATE_GOLDEN=1 pytest tests/test_golden.py")
    want = json.loads(golden.read_text())
    assert len(got["items"]) == len(want["items"])
    for g, w in zip(got["items"], want["items"], strict=True):
        assert g == w, f"{method}: item {w.get('qa_id', '?')} differs from {golden.name}"
    assert got["metrics"] == want["metrics"], f"{method}: metrics.json differs from {golden.name}"
