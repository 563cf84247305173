"""FluxMem's graded LLM verification (Stage 1), verbatim: the system and user prompts of ``OpenAILLM.verify`` in
zjunlp/LightMem ``src/fluxmem/interfaces/llm.py`` at 8fc9a91, which ``SemanticRetriever._compute_llm_verification``
(``src/fluxmem/retrieval/semantic_retriever.py``) calls once per candidate with the query as the claim and the
candidate's content as the evidence, at temperature 0.1. The reply is plain text; its first number, clipped to
[0, 1], is the score (upstream: 0.0 when there is none).

Upstream text, never edited. ``VERSION`` keys the response cache.
"""

VERSION = "fluxmem-upstream-8fc9a91-verify"

#: Byte-identical copy of upstream's ``system_prompt`` in ``OpenAILLM.verify`` (sha256 in baselines/FIDELITY.md).
VERIFY_SYSTEM = (
    "You are a verification assistant. Your task is to judge how well "
    "the evidence supports the claim. Return ONLY a single float number "
    "between 0.0 and 1.0, where 0.0 means completely unrelated and 1.0 "
    "means the evidence fully supports the claim."
)

#: Upstream's ``user_prompt`` f-string as a template (``claim`` = the question, ``evidence`` = the candidate).
VERIFY_USER = "Claim: {claim}\n\nEvidence: {evidence}\n\nRelevance score (0.0-1.0):"

#: How upstream reads the reply: the first number in it.
SCORE_PATTERN = r"(\d+\.?\d*)"
