# ruff: noqa: W291 (the prompt keeps the original's trailing spaces)
"""Mem0's LoCoMo answer prompt, verbatim: ``ANSWER_PROMPT`` of mem0ai/mem0 ``evaluation/prompts.py`` at commit
``aae5989e7``, and the way ``evaluation/src/memzero/search.py`` (same commit) sends it.

Their ``answer_question``: per speaker, the searched memories as ``"<timestamp>: <memory>"`` strings,
``json.dumps(..., indent=4)``; the template rendered with jinja2 (``{{speaker_1_user_id}}`` = the user id before
its first ``_``, i.e. the speaker's name); one **system** message; ``temperature=0.0``, no ``max_tokens`` (the API's
default); the reply used as it comes (no post-processing). :data:`UPSTREAM` answers both Mem0 methods under
``eval.answer_prompt=upstream``; the per-speaker lists come from the method's ``Evidence.layout``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memcore.datasets.locomo.protocols import LoCoMoEvalProtocol
from memcore.eval.upstream import UpstreamAnswer
from memcore.interfaces import Message
from memcore.types import Evidence, QAItem

VERSION = "mem0-answer-aae5989e7"
SOURCE = "mem0ai/mem0 evaluation/prompts.py, evaluation/src/memzero/search.py @ aae5989e7"

#: Upstream sets no max_tokens (the API default); this cap is far above their 5-6-word answers plus the
#: step-by-step reasoning the prompt asks for, and keeps a local model's runaway reply bounded.
MAX_TOKENS = 2000

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

    Memories for user {{speaker_1_user_id}}:

    {{speaker_1_memories}}

    Memories for user {{speaker_2_user_id}}:

    {{speaker_2_memories}}

    Question: {{question}}

    Answer:
    """

_VARIABLE = re.compile(r"\{\{(\w+)\}\}")


def render(template: str, values: dict[str, str]) -> str:
    """jinja2's ``Template(template).render(**values)`` for a template of plain ``{{name}}`` variables: each
    replaced, in one pass, by its value as a string (an unknown name renders empty, as jinja2's default)."""
    return _VARIABLE.sub(lambda m: str(values.get(m.group(1), "")), template)


@dataclass(frozen=True)
class Mem0Answer(LoCoMoEvalProtocol):
    """Mem0's answer call: the rendered ``ANSWER_PROMPT`` as one system message, reply unchanged."""

    def context(self, evidence: Evidence) -> str:
        """The two speakers' names and memory lists (``Evidence.layout["speaker_memories"]``) as JSON."""
        pairs = evidence.layout.get("speaker_memories")
        if not pairs or len(pairs) != 2:
            raise ValueError("Mem0's upstream answer prompt needs the two speakers' memory lists (Evidence.layout)")
        return json.dumps([[str(name), [str(m) for m in memories]] for name, memories in pairs])

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        (name_1, memories_1), (name_2, memories_2) = json.loads(context)
        prompt = render(
            ANSWER_PROMPT,
            {
                "speaker_1_user_id": name_1,
                "speaker_2_user_id": name_2,
                "speaker_1_memories": json.dumps(memories_1, indent=4),
                "speaker_2_memories": json.dumps(memories_2, indent=4),
                "question": item.question,
            },
        )
        return [{"role": "system", "content": prompt}]

    def postprocess(self, reply: str, options: tuple[str, ...]) -> str:
        return reply

    def prompt_version(self) -> str:
        return VERSION


UPSTREAM = UpstreamAnswer(
    spec=Mem0Answer(
        name="mem0-upstream",
        prompt_name="Mem0's ANSWER_PROMPT (memories per speaker, <= 5-6 words, think step by step)",
        temperature_default=0.0,
        temperature_adversarial=0.0,
        max_tokens=MAX_TOKENS,
        json_reply=False,
    ),
    source=SOURCE,
    needs_layout=True,
)
