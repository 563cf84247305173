"""FluxMem prompts (baselines/fluxmem): fact extraction (semantic layer), LLM relevance verification
(Stage 1), answer-support check with failure attribution and node reshaping (Stage 2), and skill
extraction, episode re-run and skill rewriting (Stage 3). Every reply is one JSON object.

Each prompt is sent with ``prompt_version=f"{VERSION}:<purpose>"``; bump ``VERSION`` whenever any text
here changes, so the response cache never hands back a reply to an older prompt.
"""

VERSION = "fluxmem-v2"

# --- construction: semantic layer ----------------------------------------------------------------
FACTS_SYSTEM = (
    "You extract facts for the semantic layer of a long-term conversational memory. Each fact is one short, "
    "self-contained sentence. Reply with a single JSON object and nothing else."
)

FACTS_USER = """Session date: {session_date}

Turn to record ({dia_id}):
{speaker}: {text}

List up to {max_facts} atomic facts that {speaker} states in this turn: events, plans, preferences, opinions, relationships, possessions, places, dates, numbers. Each fact names the person ({speaker} or whoever it is about) instead of a pronoun. Resolve relative dates ("yesterday", "last week", "next month") against the session date into explicit dates. Leave out greetings, filler, emojis, questions and the session date itself. A turn with nothing worth remembering gives an empty list.

Format: {{"facts": ["...", "..."]}}"""

# --- Stage 1: LLM verification of the top candidates ---------------------------------------------
VERIFY_SYSTEM = (
    "You check which memory facts are relevant to a question about a past conversation. "
    "Reply with a single JSON object and nothing else."
)

VERIFY_USER = """Question: {question}

Candidate facts:
{candidates}

Which candidates help answer the question (directly, or as one part of a multi-step answer)? List their numbers.

Format: {{"relevant": [1, 4]}}"""

# --- Stage 2: support check + failure attribution --------------------------------------------------
CHECK_SYSTEM = (
    "You audit an answer to a question about a past conversation against the memory it was given. "
    "You judge only whether the memory supports the answer; you do not know the true answer. "
    "Reply with a single JSON object and nothing else."
)

CHECK_USER = """Question: {question}
Answer given: {answer}

Memory given to the answerer:
{facts}
{extra}
Is the answer supported by these facts? An answer that says the information is not available counts as supported only if the facts really do not contain it.

If it is not supported, name the one main cause:
- "under_connection": a needed fact is missing from the memory above; say in "missing" what to look for.
- "over_connection": some facts are distracting or misleading; list their numbers in "distracting".
- "granularity": a relevant fact is too vague, too long or too abstract; list its numbers in "reshape".

Format: {{"supported": false, "failure": "under_connection", "missing": "...", "distracting": [], "reshape": []}}
or {{"supported": true, "failure": "none", "missing": "", "distracting": [], "reshape": []}}"""

RESHAPE_SYSTEM = (
    "You refine one unit of a conversational memory so that it is at the right level of detail. "
    "Reply with a single JSON object and nothing else."
)

RESHAPE_USER = """Question being answered: {question}

Memory fact: {fact}
Original turn it came from ({date}): {source}

Rewrite the fact at the right granularity for questions like this one: "expand" it with concrete details from the original turn (names, dates, numbers, places) when it is too vague, or "abstract" it into one concise statement when it is long or cluttered. Only use what the original turn says.

Format: {{"mode": "expand", "text": "..."}}"""

# --- Stage 3: consolidation into skills --------------------------------------------------------------
SKILL_EXTRACT_SYSTEM = (
    "You distil a reusable procedure from several similar question-answering episodes over a conversational memory. "
    "Reply with a single JSON object and nothing else."
)

SKILL_EXTRACT_USER = """Episodes (question, how the memory was refined, answer, whether the answer was supported):
{episodes}

Write one short skill: a general, step-by-step procedure for answering questions like these from memory facts (what to look for, how to combine facts, how to phrase the answer, when to say the information is not available). Do not copy specific answers. At most {max_words} words.

Format: {{"skill": "..."}}"""

SKILL_RERUN_SYSTEM = (
    "You answer a question about a past conversation from memory facts, following a given procedure, "
    "and judge whether the facts support your answer. Reply with a single JSON object and nothing else."
)

SKILL_RERUN_USER = """Procedure: {skill}

Memory facts:
{facts}

Question: {question}

Answer in a short phrase, then say whether the facts support that answer.

Format: {{"answer": "...", "success": true}}"""

SKILL_REFINE_SYSTEM = (
    "You improve a procedure for answering questions from a conversational memory, using the results of re-running it. "
    "Reply with a single JSON object and nothing else."
)

SKILL_REFINE_USER = """Current skill (score {score:.2f}; success rate {success:.2f}, length {tokens} tokens):
{skill}

Re-run results:
{results}

Rewrite the skill: fix the steps that led to unsupported answers and delete redundant or overly specific content. Keep it general and at most {max_words} words.

Format: {{"skill": "..."}}"""
