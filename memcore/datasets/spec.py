"""What a dataset declares to the harness: :class:`DatasetSpec` and its categories.

A dataset is one package under ``memcore/datasets/<kind>/`` (or a package outside the repository, registered
through the ``memcore.datasets`` entry-point group) holding a :class:`DatasetSpec`. The harness reads the run's
dataset only through it: where its file is, how it loads into :mod:`memcore.types` values, which question
categories it has (and which the headline overall leaves out), what an evidence id names, which answer
protocols fit it and, optionally, an audit overlay of corrected gold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcore.types import Conversation, QAItem


@dataclass(frozen=True)
class CategoryInfo:
    """One question category. ``id`` is the int an item stores; ``name`` the snake-case word an item record
    stores (``multi_hop``); ``title`` the word tables show (``multi-hop``). ``adversarial``: its questions
    have no answer in the conversation; ``headline_excludes``: the headline overall (``overall_no_adv``)
    leaves it out (the full overall keeps every category)."""

    id: int
    name: str
    title: str
    adversarial: bool = False
    headline_excludes: bool = False

    @property
    def heading(self) -> str:
        """``"1 multi-hop"``: the id and the title, as tables head a category."""
        return f"{self.id} {self.title}"


@dataclass(frozen=True)
class DatasetCategories:
    """A dataset's categories in table order; ids are unique. ``headline_title``: how tables name the headline
    overall (the categories not ``headline_excludes``)."""

    categories: tuple[CategoryInfo, ...]
    headline_title: str = "Overall, headline"

    def __post_init__(self) -> None:
        ids = [c.id for c in self.categories]
        if not ids:
            raise ValueError("a dataset declares at least one category")
        if len(set(ids)) != len(ids):
            raise ValueError(f"category ids repeat: {ids}")

    def __iter__(self) -> Iterator[CategoryInfo]:
        return iter(self.categories)

    def __len__(self) -> int:
        return len(self.categories)

    def __contains__(self, category: object) -> bool:
        return isinstance(category, int) and category in self.ids

    @property
    def ids(self) -> tuple[int, ...]:
        """Every category id, in table order: what the full overall covers."""
        return tuple(c.id for c in self.categories)

    @property
    def headline_ids(self) -> tuple[int, ...]:
        """The ids the headline overall covers (those not ``headline_excludes``)."""
        return tuple(c.id for c in self.categories if not c.headline_excludes)

    @property
    def adversarial_ids(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.categories if c.adversarial)

    def get(self, category: int) -> CategoryInfo:
        """The category with id ``category``; ``ValueError`` naming the known ids otherwise."""
        for c in self.categories:
            if c.id == int(category):
                return c
        known = ", ".join(c.heading for c in self.categories)
        raise ValueError(f"unknown category {category!r}; this dataset's categories are {known}")

    @staticmethod
    def span(ids: tuple[int, ...]) -> str:
        """``"1-4"`` for consecutive ids, else ``"1,3,4"``."""
        if ids and list(ids) == list(range(ids[0], ids[0] + len(ids))) and len(ids) > 1:
            return f"{ids[0]}-{ids[-1]}"
        return ",".join(str(i) for i in ids)

    @property
    def overall_label(self) -> str:
        """``"Overall, cat. 1-5"``: how tables head the overall of every category."""
        return f"Overall, cat. {self.span(self.ids)}"

    @property
    def headline_label(self) -> str:
        """``"Overall w/o adv, cat. 1-4"``: how tables head the headline overall."""
        return f"{self.headline_title}, cat. {self.span(self.headline_ids)}"

    def describe(self) -> str:
        """``"1 multi-hop, 2 temporal, …"``: for error messages and notes."""
        return ", ".join(c.heading for c in self.categories)


@dataclass(frozen=True)
class DatasetFile:
    """A loaded dataset file: its conversations in file order (QA items inside), the file's sha256 (it keys
    the run) and the loader's cleaning report (counts by kind, JSON-ready; ``{}`` when nothing was cleaned)."""

    conversations: tuple[Conversation, ...]
    sha256: str
    cleaning: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditOverlay:
    """A dataset's corrected gold applied to a slice: ``conversations`` with the corrections in (every item of
    the slice, corrected or not), ``changed`` (item_id → why it was corrected) and ``summary`` (counts, logged)."""

    conversations: list[Conversation]
    changed: dict[str, str]
    summary: dict[str, Any]


#: The granularities a dataset's gold evidence can be given at.
EVIDENCE_LEVELS: tuple[str, ...] = ("turn", "session")
#: ``locate(dataset.path)`` → the dataset file; raises ``DataError`` saying where it looked and how to get it.
Locate = Callable[[str | None], Path]
#: ``load(path)`` → the file's conversations; raises ``DataError`` (one line, what to fix) for a bad file.
Load = Callable[[Path], DatasetFile]
#: ``audit(conversations, eval.audit_path)`` → the overlay of corrected gold on the slice.
Audit = Callable[[Sequence[Conversation], str | None], AuditOverlay]


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset, as the harness sees it.

    - ``locate`` / ``load``: where the file is by default (given ``dataset.path``, which may be null) and how it
      becomes conversations; every QA item's ``category`` is one of ``categories``' ids and every evidence id
      names a turn (``Turn.dia_id``) of its conversation: recall is computed against them.
    - ``evidence_unit``: what one evidence id names, in words (for the docs and error messages);
      ``evidence_levels``: the granularities its gold evidence is given at (``turn``, ``session`` or both): at
      ``session`` an item's session ids are in ``metadata["evidence_sessions"]``, and session recall is scored.
    - ``table_notes``: the footnotes every table of a run on it carries (what its category ids mean).
    - ``protocols``: the answer protocols (``protocol.name``) whose rules fit its questions, the default first;
      a dataset with none can only be run retrieval-only (``eval.answer=false``).
    - ``audit``: the overlay of corrected gold behind ``eval.audited=true``, or ``None`` when it has none.
    """

    kind: str
    description: str
    locate: Locate
    load: Load
    categories: DatasetCategories
    evidence_unit: str
    protocols: tuple[str, ...] = ()
    audit: Audit | None = None
    evidence_levels: tuple[str, ...] = ("turn",)
    table_notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = [level for level in self.evidence_levels if level not in EVIDENCE_LEVELS]
        if bad or not self.evidence_levels:
            raise ValueError(f"dataset {self.kind!r}: evidence_levels {self.evidence_levels!r}; use {EVIDENCE_LEVELS}")

    @property
    def default_protocol(self) -> str | None:
        return self.protocols[0] if self.protocols else None

    def category_name(self, item: QAItem) -> str:
        """The snake-case name an item record stores for ``item``'s category."""
        return self.categories.get(int(item.category)).name
