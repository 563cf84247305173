"""Shared fixtures. ``--runslow`` enables tests marked slow (the local LLM server, full-dataset work) or e2e
(launches processes: the memcore-run CLI, sweeps, real end-to-end runs); without it (``make test-fast``) both
are skipped, so the default run takes seconds. ``make test`` runs ``--runslow -m "not slow or e2e"``."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow or e2e: run with --runslow (make test does)")
    for item in items:
        if "slow" in item.keywords or "e2e" in item.keywords:
            item.add_marker(skip)
