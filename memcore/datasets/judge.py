"""What a judge preset is: :class:`JudgePreset`, the contract a dataset's LLM judges (metric J) fulfil.

A judge preset is a dataset's rule for grading an answer: the messages it sends for one item, how its reply is
read into CORRECT / WRONG, which categories it grades, the model and number of runs it is meant to be run with,
and where its text comes from. A dataset declares its presets in its package's ``JUDGES`` literal
(``{"<name>": "<module>:<OBJECT>"}``); each of its protocols names the presets that grade its answers
(:attr:`~memcore.datasets.protocol.EvalProtocol.judges`, the default first). The judge stage
(:mod:`memcore.eval.judge`) makes the calls, counts them and keys the response cache on :meth:`prompt_version`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memcore.datasets.protocol import EvalProtocol
from memcore.interfaces import Message
from memcore.types import QAItem

#: The two labels a judge gives.
LABELS: tuple[str, str] = ("CORRECT", "WRONG")

#: ``(item asked, item whose gold grades the answer, answer, the run's answer protocol)`` → the judge's messages.
#: The two items differ only when the answer is graded against corrected (audited) gold.
JudgeMessages = Callable[[QAItem, QAItem, str, EvalProtocol], list[Message]]
#: ``(question, gold, answer, refusal expected)`` → the judge's messages, for presets that grade from text alone.
TextMessages = Callable[[str, str, str, bool], list[Message]]
#: A reply → ``(label, reason)``: of the parsed JSON object when ``json_reply`` (ValueError / TypeError / KeyError
#: for a reply of the wrong shape, which is retried), else of the reply's text (must accept every text).
ReadReply = Callable[[Any], tuple[str, str]]


@dataclass(frozen=True)
class JudgePreset:
    """One judge protocol.

    ``hash_parts``: every text the prompt is made of, read at call time (so :meth:`prompt_hash` follows the
    module's text). ``categories``: the category ids it grades (items of other categories get no J).
    ``default_backbone``: the backbone preset it judges with (``configs/backbone/<name>.yaml``; None = the run's
    own). ``text_messages``: the same prompt built from strings, for presets that need nothing of the item but its
    question and gold (the judge probe grades such cases); None otherwise."""

    name: str
    version: str
    hash_parts: Callable[[], tuple[str, ...]]
    messages: JudgeMessages
    read: ReadReply
    categories: tuple[int, ...]
    default_backbone: str | None
    default_runs: int
    max_tokens: int
    source: str
    json_reply: bool = True
    text_messages: TextMessages | None = None

    def prompt_hash(self) -> str:
        """sha256 (first 16 hex digits) of everything the prompt is made of."""
        return hashlib.sha256("\x1e".join([self.version, *self.hash_parts()]).encode("utf-8")).hexdigest()[:16]

    def prompt_version(self, run: int = 0) -> str:
        """``<VERSION>@<hash>`` (+ ``#run-r`` for run index r > 0): what the response cache keys on."""
        base = f"{self.version}@{self.prompt_hash()}"
        return base if run == 0 else f"{base}#run-{run}"

    def judges(self, category: int) -> bool:
        """Whether this preset grades items of ``category``."""
        return int(category) in self.categories
