"""LongMemEval's six question types as the harness's categories (ids in the order of the release's README).

Abstention is no type of its own: a question whose ``question_id`` ends with ``_abs`` is an abstention question
of its type (its answer says why it cannot be answered); the loader marks it in the item's metadata
(``abstention``) and leaves it without gold evidence, so recall skips it as the official retrieval evaluation does.
"""

from __future__ import annotations

from memcore.datasets.spec import CategoryInfo, DatasetCategories

#: The release's ``question_type`` values in category-id order (1 … 6).
QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)

#: The suffix of an abstention question's ``question_id``.
ABSTENTION_SUFFIX = "_abs"

LONGMEMEVAL_CATEGORIES = DatasetCategories(
    tuple(CategoryInfo(id=i, name=t.replace("-", "_"), title=t) for i, t in enumerate(QUESTION_TYPES, start=1)),
    headline_title="Overall",
)

#: The note every table of a LongMemEval run carries.
TYPE_NOTE = (
    "Categories are LongMemEval's question types (1 single-session-user, 2 single-session-assistant, "
    "3 single-session-preference, 4 multi-session, 5 knowledge-update, 6 temporal-reasoning); abstention "
    "questions (ids ending in _abs) count under their type and, as in the official retrieval evaluation, carry "
    "no gold evidence, so recall skips them."
)


def category_of(question_type: str) -> int:
    """The category id of a ``question_type``; ValueError naming the known types otherwise."""
    try:
        return QUESTION_TYPES.index(question_type) + 1
    except ValueError:
        raise ValueError(f"unknown question_type {question_type!r}; use one of {', '.join(QUESTION_TYPES)}") from None
