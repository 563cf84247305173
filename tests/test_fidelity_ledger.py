"""baselines/FIDELITY.md: every prompt row's harness copy hashes to the ledger's sha256, and equals upstream's unless
the row says ``(adapted)``; every section has its Upstream line and the three subsections, in order."""

from __future__ import annotations

import hashlib
import importlib
import re
from dataclasses import dataclass

import pytest

from tests.support import REPO

LEDGER = REPO / "baselines" / "FIDELITY.md"
PROMPT_COLUMNS = ["prompt", "upstream source", "upstream sha256", "harness copy", "harness sha256"]
SETTINGS_COLUMNS = ["setting", "upstream", "harness", "matched / changed, and why"]
SUBSECTIONS = ["### Prompts", "### Settings", "### Not reimplemented"]
SHA256 = re.compile(r"[0-9a-f]{64}")
SOURCE = re.compile(r"`[\w.-]+/[\w.-]+` `[^`]+` @ `[\w.-]+`")
COPY = re.compile(r"`([\w.]+):([A-Za-z_]\w*)`")


@dataclass(frozen=True)
class PromptRow:
    section: str
    prompt: str
    source: str
    upstream_sha: str
    copy: str
    harness_sha: str


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def sections(text: str) -> dict[str, list[str]]:
    """``## <name>`` heading → the lines under it (up to the next ``## ``)."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def table_after(lines: list[str], heading: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the first Markdown table after ``heading`` (before the next ``###``)."""
    start = lines.index(heading) + 1
    rows: list[list[str]] = []
    for line in lines[start:]:
        if line.startswith("###"):
            break
        if line.startswith("|"):
            rows.append(_cells(line))
    if len(rows) < 2:
        return [], []
    return rows[0], rows[2:]


def prompt_rows(text: str) -> list[PromptRow]:
    rows = []
    for name, lines in sections(text).items():
        if "### Prompts" not in lines:
            continue
        _, body = table_after(lines, "### Prompts")
        for cells in body:
            rows.append(PromptRow(name, *cells[:5]))
    return rows


LEDGER_TEXT = LEDGER.read_text(encoding="utf-8")
ROWS = prompt_rows(LEDGER_TEXT)


def test_every_section_has_its_upstream_line_and_three_subsections_in_order() -> None:
    found = sections(LEDGER_TEXT)
    assert {"amem", "mem0", "mem0-two-phase", "full_context, rag_locomo"} <= set(found)
    for name, lines in found.items():
        content = [line for line in lines if line.strip()]
        assert content and content[0].startswith("Upstream: "), f"{name}: the first line must be 'Upstream: ...'"
        assert re.match(r"Upstream: [\w.-]+/[\w.-]+ at \S+ \(.+\)", content[0]), f"{name}: {content[0]}"
        positions = [lines.index(h) if h in lines else -1 for h in SUBSECTIONS]
        assert -1 not in positions and positions == sorted(positions), f"{name}: needs {SUBSECTIONS} in order"
        header, body = table_after(lines, "### Prompts")
        assert header == PROMPT_COLUMNS, f"{name}: prompt table columns {header}"
        header, body = table_after(lines, "### Settings")
        assert header == SETTINGS_COLUMNS and body, f"{name}: settings table columns {header}"
        after = lines[lines.index("### Not reimplemented") + 1 :]
        assert any(line.startswith("- ") for line in after), f"{name}: 'Not reimplemented' needs a bullet list"


def test_the_ledger_has_prompt_rows() -> None:
    assert len(ROWS) >= 10
    for r in ROWS:
        assert SOURCE.fullmatch(r.source), f"{r.section} / {r.prompt}: source {r.source!r}"
        assert SHA256.fullmatch(r.upstream_sha) and SHA256.fullmatch(r.harness_sha), f"{r.section} / {r.prompt}"
        assert COPY.fullmatch(r.copy), f"{r.section} / {r.prompt}: harness copy {r.copy!r}"


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.section}: {r.prompt}" for r in ROWS])
def test_a_prompt_rows_harness_copy_hashes_as_the_ledger_says(row: PromptRow) -> None:
    module, attr = COPY.fullmatch(row.copy).groups()  # type: ignore[union-attr]
    value = getattr(importlib.import_module(module), attr)
    assert isinstance(value, str), f"{row.copy} is a {type(value).__name__}, not a str"
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()
    assert digest == row.harness_sha, f"{row.copy} changed: sha256 {digest}, the ledger says {row.harness_sha}"
    if not row.prompt.endswith(" (adapted)"):
        assert row.upstream_sha == row.harness_sha, f"{row.section} / {row.prompt} differs from upstream"
