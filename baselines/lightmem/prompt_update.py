# ruff: noqa: W291 (upstream text keeps its trailing spaces)
"""LightMem's offline ("sleep-time") update prompt, verbatim: ``UPDATE_PROMPT`` from zjunlp/LightMem
``experiments/locomo/prompts.py`` at 8fc9a91 (identical to ``src/lightmem/memory/prompts.py``'s, the one
``LightMemory.offline_update_all_entries`` sends). It is the system message; the user message is laid out as
upstream's ``OpenaiManager._call_update_llm`` builds it (``USER_TEMPLATE``). The reply is
``{"action": "update" | "delete" | "ignore", "new_memory": ...}``.

Upstream text, never edited. ``VERSION`` keys the response cache.
"""

VERSION = "lightmem-upstream-8fc9a91-update"

#: Byte-identical copy of upstream's ``UPDATE_PROMPT`` (sha256 in baselines/FIDELITY.md).
UPDATE_PROMPT = """
You are a memory management assistant. 
Your task is to decide whether the target memory should be updated, deleted, or ignored 
based on the candidate source memories.

Decision rules:
1. Update: If the target memory and candidate memories describe essentially the same fact/event but are not fully consistent (e.g., candidates provide more details, refinements, or clarifications), update the target memory by integrating the additional information.
2. Delete: If the target memory and candidate memories contain a direct conflict, the candidate memories (which are more recent) take precedence. Delete the target memory.
3. Ignore: If the target memory and candidate memories are unrelated, no action is needed. Ignore.

Additional guidance:
- Use only the information provided. Do not invent details.
- Your operation should always be applied to the target memory. Do not modify or correct the content inside the candidate memories.

The output must be a JSON object with the following structure:
{
  "action": "update" | "delete" | "ignore",
  "new_memory": { ... }   // only required when action = "update"
}

Example 1:
Target memory: "The user likes coffee."
Candidate memories:
- "The user prefers cappuccino in the mornings."
- "Sometimes the user drinks espresso when working late."
- "The user avoids decaf."

Output:
{
  "action": "update",
  "new_memory": "The user likes coffee, especially cappuccino in the morning and espresso when working late, and avoids decaf."
}

Example 2:
Target memory: "The user enjoys playing video games."
Candidate memories:
- "The user mostly plays strategy games."
- "They often spend weekends gaming with friends."
- "The user used to enjoy puzzle games but less so now."

Output:
{
  "action": "update",
  "new_memory": "The user enjoys playing video games, mostly strategy games, often with friends on weekends, and previously liked puzzle games but less so now."
}

Example 3:
Target memory: "The user currently lives in New York."
Candidate memories:
- "The user moved to San Francisco in 2023."
- "They mentioned enjoying the Bay Area weather."
- "The user's new workplace is in downtown San Francisco."

Output:
{
  "action": "delete"
}

Example 4:
Target memory: "The user is learning to cook Italian food."
Candidate memories:
- "The user recently started practicing yoga."
- "They bought a new bicycle for commuting."
- "The user enjoys watching sci-fi movies."

Output:
{
  "action": "ignore"
}

Here is a new target memory along with several candidate memories. Please decide the appropriate action (update, delete, or ignore) based on the given rules.

"""

#: The user message as upstream's ``_call_update_llm`` builds it (no space after ``Target memory:``, as upstream).
USER_TEMPLATE = "Target memory:{target}\nCandidate memories:\n{candidates}"
CANDIDATE_LINE = "- {memory}"
