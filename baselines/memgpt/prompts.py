"""MemGPT's per-step messages, memory-pressure alert and eviction summary.

The system prompt is MemGPT's own ``memgpt_chat`` (:mod:`baselines.memgpt.system_prompt`, verbatim) plus the
harness's LoCoMo framing (:mod:`baselines.memgpt.framing`). Verbatim from cpacker/MemGPT @ 0.2.6:
:data:`PRESSURE_ALERT` (``MESSAGE_SUMMARY_WARNING_STR``, ``memgpt/constants.py``), :data:`SUMMARY_SYSTEM`
(``SYSTEM`` of ``memgpt/prompts/gpt_summarize.py`` with its ``WORD_LIMIT`` 100) and the text of
:data:`SUMMARY_NOTE` (``package_summarize_message``, ``memgpt/system.py``; MemGPT wraps these two in a JSON
``system_alert`` with the local time, the harness sends the text). The per-step directives are the harness's:
MemGPT runs one step per user message with no directive.
"""

VERSION = "memgpt-v3"

#: MemGPT 0.2.6 ``MESSAGE_SUMMARY_WARNING_STR``, shown once the context passes the warning fraction.
PRESSURE_ALERT = (
    "Warning: the conversation history will soon reach its maximum length and be trimmed. "
    "Make sure to save any important information from the conversation to your memory before it is removed."
)

#: The message that stands for the evicted messages at the head of the context (``package_summarize_message``).
SUMMARY_NOTE = (
    "Note: prior messages ({hidden} of {total} total messages) have been hidden from view due to conversation "
    "memory constraints.\nThe following is a summary of the previous {summarized} messages:\n {summary}"
)

#: Trailing state message of an ingestion step: core memory, stats and what to do now.
INGEST_STEP = """{core}
[memory stats] archival memory: {n_archival} entries; recall memory: {n_recall} messages, {n_hidden} hidden from view.

{directive}"""

INGEST_NEW_MESSAGE = (
    "A new message arrived (the last one above). Decide what to remember from it: key lasting facts go to core memory, "
    "detailed events with their dates go to archival memory. Call done if there is nothing to save. Reply with one JSON object."
)

INGEST_CONTINUE = "The function result is above. Continue, or call done. Reply with one JSON object."

INGEST_ALERT = (
    "A system warning arrived (the last message above). Save what matters with your functions, or call done. "
    "Reply with one JSON object."
)

QA_STEP = """{core}
[memory stats] archival memory: {n_archival} entries; recall memory: {n_recall} messages, {n_hidden} hidden from view.

QUESTION: {question}
Search your memory for the information needed to answer this question; what you find will be handed to the answerer. Use archival_memory_search and conversation_search with short queries (names, key words). Call done when you have found enough. Reply with one JSON object."""

#: Wrapper for a function's return value in the message history (MemGPT's 'function' role).
FUNCTION_RESULT = "[function result: {name}] {status}: {message}"

#: ``SYSTEM`` of MemGPT 0.2.6 ``memgpt/prompts/gpt_summarize.py`` (an f-string; ``WORD_LIMIT`` = 100), verbatim.
SUMMARY_SYSTEM = """
Your job is to summarize a history of previous messages in a conversation between an AI persona and a human.
The conversation you are given is a from a fixed context window and may not be complete.
Messages sent by the AI are marked with the 'assistant' role.
The AI 'assistant' can also make calls to functions, whose outputs can be seen in messages with the 'function' role.
Things the AI says in the message content are considered inner monologue and are not seen by the user.
The only AI messages seen by the user are from when the AI uses 'send_message'.
Messages the user sends are in the 'user' role.
The 'user' role is also used for important system events, such as login events and heartbeat events (heartbeats run the AI's program without user action, allowing the AI to act without prompting from the user sending them a message).
Summarize what happened in the conversation from the perspective of the AI (use the first person).
Keep your summary less than 100 words, do NOT exceed this word limit.
Only output the summary, do NOT include anything else in your output.
"""

#: The word limit written in :data:`SUMMARY_SYSTEM` (``gpt_summarize.WORD_LIMIT``).
SUMMARY_WORD_LIMIT = 100


def summary_system(words: int) -> str:
    """:data:`SUMMARY_SYSTEM` with its word limit set to ``words`` (verbatim at MemGPT's 100)."""
    return SUMMARY_SYSTEM.replace(f"less than {SUMMARY_WORD_LIMIT} words", f"less than {words} words")
