"""Shared fixtures and the ``--runslow`` switch.

``--runslow`` enables tests marked slow (the local LLM server, full-dataset work) or e2e (launches processes: the
memcore-run CLI, sweeps, real end-to-end runs); without it (``make test-fast``) both are skipped, so the default run
takes seconds. ``make test`` runs ``--runslow -m "not slow or e2e"``.

Fixtures: ``locomo_path`` / ``locomo`` / ``audit_path`` (the data, skipped by one rule when absent), ``compose``
(the run config as ``memcore-run`` composes it, results under ``tmp_path``), ``scripted`` (a scripted backbone
that records its calls' keyword arguments) and ``tiny_conversation`` (a hand-made conversation with QA). Plain
helpers live in ``tests/support.py``, the fake LLMs in ``tests/fakes.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memcore.datasets.locomo.loader import LoCoMoDataset, load_locomo
from memcore.types import Conversation
from tests.fakes import RecordingBackbone
from tests.support import compose_run, data_file_or_skip, story_conversation


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


@pytest.fixture(autouse=True)
def _root_log_handlers_restored() -> Iterator[None]:
    """A CLI ``main`` called in-process configures the root logger (``logging.basicConfig``) with the stream capsys
    lends it; that stream is closed after the test, so the handler is removed again here."""
    root = logging.getLogger()
    before = list(root.handlers)
    yield
    for handler in [h for h in root.handlers if h not in before]:
        root.removeHandler(handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow or e2e: run with --runslow (make test does)")
    for item in items:
        if "slow" in item.keywords or "e2e" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    """locomo10.json as the harness resolves it (``$MEMCORE_DATA``, ``../shared/data``, ...); skips without it."""
    return data_file_or_skip("locomo")


@pytest.fixture(scope="session")
def locomo(locomo_path: Path) -> LoCoMoDataset:
    """The whole LoCoMo dataset, loaded once per session."""
    return load_locomo(locomo_path)


@pytest.fixture(scope="session")
def audit_path() -> Path:
    """The locomo-audit ``errors.json``; skips without it."""
    return data_file_or_skip("audit")


@pytest.fixture
def compose(tmp_path: Path) -> Callable[[Sequence[str]], DictConfig]:
    """``compose(overrides)``: the run config as ``memcore-run`` composes it, results under ``tmp_path``."""

    def _compose(overrides: Sequence[str]) -> DictConfig:
        return compose_run(tmp_path, overrides)

    return _compose


@pytest.fixture
def scripted() -> Callable[..., RecordingBackbone]:
    """``scripted(replies, **kwargs)``: a scripted backbone answering with a responder, one reply text or reply
    texts in turn; it records every call (``calls``) and its keyword arguments (``kwargs``)."""

    def _scripted(replies: Any, **kwargs: Any) -> RecordingBackbone:
        return RecordingBackbone(replies, **kwargs)

    return _scripted


@pytest.fixture
def tiny_conversation() -> Conversation:
    """Alice and Bob over two sessions (Rex the puppy; the violin), with three QA items."""
    return story_conversation()
