# ruff: noqa: W291 (the prompt keeps the original's trailing spaces)
"""LightMem's LoCoMo answer prompt, verbatim: ``ANSWER_PROMPT`` of zjunlp/LightMem
``experiments/locomo/prompts.py`` at commit ``8fc9a91``, laid out as ``build_prompt_with_speaker_memories`` of
``experiments/locomo/search_locomo.py`` (same commit) lays it out.

Their layout: the retrieved entries grouped by speaker in order of first appearance (the first two speakers fill
the prompt; a missing one is ``"Speaker 2"`` with ``"No memories available."``), each entry
``format_related_memories``' ``"[Memory recorded on: <%d %B %Y>, <weekday %a>]\n<memory>"``, joined by a blank
line; the prompt filled with ``str.format`` and sent as one **system** message at ``temperature=0.0`` with no
``max_tokens`` (the API default); the reply used as it comes. The entries come from the method's
``Evidence.layout["entries"]`` (speaker, LoCoMo session date string, text).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from memcore.datasets.locomo.loader import parse_session_time
from memcore.datasets.locomo.protocols import LoCoMoEvalProtocol
from memcore.eval.upstream import UpstreamAnswer
from memcore.interfaces import Message
from memcore.types import Evidence, QAItem

VERSION = "lightmem-answer-8fc9a91"
SOURCE = "zjunlp/LightMem experiments/locomo/prompts.py, search_locomo.py, retrievers.py @ 8fc9a91"

#: Upstream sets no max_tokens (the API default); a cap far above the short answer and its reasoning.
MAX_TOKENS = 2000

NO_MEMORIES = "No memories available."

ANSWER_PROMPT = """
You are an intelligent memory assistant tasked with retrieving accurate information from conversation memories.

# CONTEXT:
You have access to memories from two speakers in a conversation. These memories contain 
timestamped information that may be relevant to answering the question.

# INSTRUCTIONS:
1. Carefully analyze all provided memories from both speakers
2. Pay special attention to the timestamps to determine the answer
3. If the question asks about a specific event or fact, look for direct evidence in the memories
4. If the memories contain contradictory information, prioritize the most recent memory
5. If there is a question about time references (like "last year", "two months ago", etc.), 
   calculate the actual date based on the memory timestamp. For example, if a memory from 
   4 May 2022 mentions "went to India last year," then the trip occurred in 2021.
6. Always convert relative time references to specific dates, months, or years. For example, 
   convert "last year" to "2022" or "two months ago" to "March 2023" based on the memory 
   timestamp. Ignore the reference while answering the question.
7. Focus only on the content of the memories from both speakers. Do not confuse character 
   names mentioned in memories with the actual users who created those memories.
8. The answer should be less than 5-6 words.

# APPROACH (Think step by step):
1. First, examine all memories that contain information related to the question
2. Examine the timestamps and content of these memories carefully
3. Look for explicit mentions of dates, times, locations, or events that answer the question
4. If the answer requires calculation (e.g., converting relative time references), show your work
5. Formulate a precise, concise answer based solely on the evidence in the memories
6. Double-check that your answer directly addresses the question asked
7. Ensure your final answer is specific and avoids vague time references

Memories for user {speaker_1_name}:

{speaker_1_memories}

Memories for user {speaker_2_name}:

{speaker_2_memories}

Question: {question}

Answer:
"""


def format_memory(timestamp: str, text: str) -> str:
    """``format_related_memories``' form of one entry (``timestamp``: the LoCoMo session date string)."""
    dt = parse_session_time(timestamp)
    return f"[Memory recorded on: {dt.strftime('%d %B %Y')}, {dt.strftime('%a')}]\n{text}".strip()


def speaker_blocks(entries: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """``build_prompt_with_speaker_memories``' two (name, memories) pairs from ``(speaker, timestamp, text)``
    entries in retrieval order."""
    groups: dict[str, list[str]] = {}
    for speaker, timestamp, text in entries:
        groups.setdefault(speaker, []).append(format_memory(timestamp, text))
    names = list(groups)
    if not names:
        return [("Speaker 1", NO_MEMORIES), ("Speaker 2", NO_MEMORIES)]
    if len(names) == 1:
        return [(names[0], "\n\n".join(groups[names[0]])), ("Speaker 2", NO_MEMORIES)]
    return [(n, "\n\n".join(groups[n])) for n in names[:2]]


@dataclass(frozen=True)
class LightMemAnswer(LoCoMoEvalProtocol):
    """LightMem's answer call: ``ANSWER_PROMPT`` over the per-speaker blocks, one system message, reply unchanged."""

    def context(self, evidence: Evidence) -> str:
        entries = evidence.layout.get("entries")
        if entries is None:
            raise ValueError("LightMem's upstream answer prompt needs the retrieved entries (Evidence.layout)")
        return json.dumps(speaker_blocks([(str(s), str(t), str(x)) for s, t, x in entries]))

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        (name_1, memories_1), (name_2, memories_2) = json.loads(context)
        prompt = ANSWER_PROMPT.format(
            speaker_1_name=name_1,
            speaker_1_memories=memories_1,
            speaker_2_name=name_2,
            speaker_2_memories=memories_2,
            question=item.question,
        )
        return [{"role": "system", "content": prompt}]

    def postprocess(self, reply: str, options: tuple[str, ...]) -> str:
        return reply

    def prompt_version(self) -> str:
        return VERSION


UPSTREAM = UpstreamAnswer(
    spec=LightMemAnswer(
        name="lightmem-upstream",
        prompt_name="LightMem's ANSWER_PROMPT (memories per speaker, <= 5-6 words, think step by step)",
        temperature_default=0.0,
        temperature_adversarial=0.0,
        max_tokens=MAX_TOKENS,
        json_reply=False,
    ),
    source=SOURCE,
    needs_layout=True,
)
