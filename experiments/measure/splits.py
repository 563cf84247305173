"""The dev / test split of LoCoMo every choice in ``results/measured`` is made on: knobs are chosen on the first five
conversations of the file and reported on the other five."""

from __future__ import annotations

DEV = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
TEST = ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50")


def split_of(conv_id: str) -> str:
    """``"dev"`` for a dev conversation, else ``"test"``."""
    return "dev" if conv_id in DEV else "test"
