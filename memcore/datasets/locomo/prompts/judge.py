"""LLM-as-judge prompt (metric J): label a generated answer CORRECT or WRONG against the gold.

In the spirit of the LoCoMo judge used by Mem0's and LightMem's evaluations (generous on wording,
length and date formats; the label is what counts), written for this project: the label comes in a
JSON object with a one-sentence reason first, so the reply parses through ``complete_json``.
``ADVERSARIAL_NOTE`` is added when the expected answer is a refusal (category 5 under the official
protocol), where the original judges skip the item instead.
"""

from __future__ import annotations

VERSION = "judge-v1"

SYSTEM = (
    "You grade answers to questions about a long conversation between two people. You compare a generated "
    "answer with the gold answer and decide whether it is CORRECT or WRONG. Reply with one JSON object only."
)

USER = """Question (asked about the two speakers' past conversations): {question}
Gold answer: {gold}
Generated answer: {answer}

Grading rules:
- The gold answer is short; the generated answer may be longer or worded differently. Count it CORRECT when it
  states the same fact, person, thing or event as the gold answer, even with extra detail.
- Dates and times: CORRECT when it refers to the same day, month, year or period, whatever the format
  ("7 May 2023" = "May 7, 2023"; "the week before 9 June 2023" matches "early June 2023").
- Lists: CORRECT when it covers the gold items without contradicting them.
- WRONG when it names a different fact, contradicts the gold answer, only guesses vaguely, or says it does not know
  while the gold answer gives a fact.{adversarial_note}

Reply as {{"reason": "<one short sentence>", "label": "CORRECT"}} or {{"reason": "<one short sentence>", "label": "WRONG"}}."""

ADVERSARIAL_NOTE = """
- This question has a false premise, so the expected answer is that the conversation does not mention it:
  CORRECT only when the generated answer says the information is not available or not mentioned."""

# The gold text shown to the judge when the protocol's expected answer is a refusal.
REFUSAL_GOLD = "Not mentioned in the conversation (the question cannot be answered from it)"
