"""LoCoMo's five question categories, with the official int mapping (``PROVENANCE.md`` of the data)."""

from __future__ import annotations

from enum import IntEnum

from memcore.datasets.spec import CategoryInfo, DatasetCategories


class Category(IntEnum):
    """A LoCoMo question category. Items store it as its int; LoCoMo's own rules (its protocols' prompts and
    F1, the judge's category 5) compare against these members."""

    MULTI_HOP = 1
    TEMPORAL = 2
    OPEN_DOMAIN = 3
    SINGLE_HOP = 4
    ADVERSARIAL = 5

    @property
    def label(self) -> str:
        """Snake-case name, e.g. ``multi_hop``."""
        return self.name.lower()

    @property
    def title(self) -> str:
        """Human label with the int, e.g. ``1 multi-hop``."""
        return f"{int(self)} {self.name.lower().replace('_', '-')}"


#: The categories as the harness reads them: category 5 (adversarial) is left out of the headline overall
#: (published LoCoMo numbers over categories 1-4), kept in the full one (A-MEM's and the paper's 1-5).
LOCOMO_CATEGORIES = DatasetCategories(
    tuple(
        CategoryInfo(
            id=int(c),
            name=c.label,
            title=c.title.split(" ", 1)[1],
            adversarial=c is Category.ADVERSARIAL,
            headline_excludes=c is Category.ADVERSARIAL,
        )
        for c in Category
    ),
    headline_title="Overall w/o adv",
)

#: The note every table of a LoCoMo run carries: the category ints and the other numbering in use.
CATEGORY_NAME_NOTE = (
    "Categories are the official LoCoMo ints (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial); "
    "Mem0's harness and its forks call the same ints 1 single-hop, 2 temporal, 3 multi-hop, 4 open-domain."
)
