"""What the harness adds to MemGPT's system prompt to run it on LoCoMo, kept apart from the verbatim prompt
(:mod:`baselines.memgpt.system_prompt`) so the two can be told apart.

MemGPT 0.2.6 builds its system message as ``memgpt_chat.txt`` + memory statistics + core memory
(``construct_system_with_memory`` in ``memgpt/agent.py``) and passes its functions as OpenAI function schemas
(``memgpt/functions/function_sets/base.py``). Here the system message is ``memgpt_chat`` followed by
:data:`LOCOMO_FRAMING`: the setting (the agent observes a conversation between two people instead of chatting
with a user), the core-memory blocks (:data:`PERSONA`, one block per speaker in place of ``<human>``) and the
functions with their upstream descriptions in a JSON reply protocol (the harness's backbones return text only).
Core memory and the statistics come in the last message of each step (:mod:`baselines.memgpt.prompts`).
"""

from __future__ import annotations

from baselines.memgpt import prompts as P
from baselines.memgpt.system_prompt import system_text

VERSION = "memgpt-locomo-framing-v1"

#: The persona block's starting content (MemGPT's default persona is ``sam_pov``, a chat companion).
PERSONA = "I am a memory agent observing the conversation between {speaker_a} and {speaker_b}."

#: ``conversation_search``'s description per ``recall_search`` mode (substring: MemGPT's docstring).
RECALL_SEARCH_DESCRIPTION = {
    "substring": "Search prior conversation history using case-insensitive string matching.",
    "keyword": "Search prior conversation history by keywords (messages ranked by how many of the query's words they contain).",
}

LOCOMO_FRAMING = """Setting of this session (it replaces the chat with a user described above):
You do not converse with a user. You observe a long conversation between {speaker_a} and {speaker_b}, one message at a time. Later you will be asked questions about it, so you must keep what matters in your memory. Nobody reads your replies, so there is no send_message function.
Your core memory has the blocks {blocks}: the persona block and one block per person in place of <human>. Core memory and your memory statistics are shown in the last message of every step.

Functions (arguments in parentheses):
- core_memory_append(name, content): Append to the contents of core memory. name: section of the memory to be edited ({blocks}).
- core_memory_replace(name, old_content, new_content): Replace to the contents of core memory. To delete memories, use an empty string for new_content. old_content must be an exact match.
- archival_memory_insert(content): Add to archival memory. Make sure to phrase the memory contents such that it can be easily queried later. Here: one self-contained fact with names and the date it happened, e.g. "On 8 May 2023 Caroline went to an LGBTQ support group."
- archival_memory_search(query, page): Search archival memory using semantic (embedding-based) search. {page_size} results per page; page allows you to page through results, only use it on a follow-up query (default 0, the first page).
- conversation_search(query, page): {recall_description} {page_size} results per page, paged as above.
- done(): nothing more to do now.

Reply with exactly one JSON object and nothing else:
{{"thought": "<inner monologue, under 50 words>", "function": "<name>", "arguments": {{...}}, "request_heartbeat": false}}
Set request_heartbeat to true only when you need another step right after this one (to store a second fact or to read search results)."""


def blocks(speaker_a: str, speaker_b: str) -> list[str]:
    """The core memory blocks in order: persona, then one per speaker."""
    return list(dict.fromkeys(["persona", speaker_a, speaker_b]))


def system_message(speaker_a: str, speaker_b: str, *, page_size: int, recall_search: str = "substring") -> str:
    """The agent's system message: MemGPT's ``memgpt_chat`` (as MemGPT loads it), a blank line, the framing."""
    framing = LOCOMO_FRAMING.format(
        speaker_a=speaker_a,
        speaker_b=speaker_b,
        blocks=", ".join(blocks(speaker_a, speaker_b)),
        page_size=page_size,
        recall_description=RECALL_SEARCH_DESCRIPTION[recall_search],
    )
    return system_text() + "\n\n" + framing


def worst_case_state() -> str:
    """The longest per-step state message with empty core memory blocks (for the window's lower bound)."""
    empty = "[core memory]\n" + "\n".join(f"<{n}>\n(empty)\n</{n}>" for n in ("persona", "Speaker A", "Speaker B"))
    return P.INGEST_STEP.format(
        core=empty, n_archival=99999, n_recall=99999, n_hidden=99999, directive=P.INGEST_NEW_MESSAGE
    )
