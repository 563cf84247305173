"""Evaluation: protocols (amem | locomo), metrics, aggregation, bootstrap CIs, and the answerer."""

from memcore.eval.aggregate import aggregate, category_name, format_table, summarize
from memcore.eval.answerer import Answerer, AnswerPrompt, AnswerResult, adversarial_options
from memcore.eval.bootstrap import bootstrap_ci
from memcore.eval.metrics import (
    amem_bleu1,
    amem_f1,
    check_protocol,
    evidence_scores,
    locomo_f1,
    locomo_normalize,
    recall_at_budget,
    score_answer,
)
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.eval.tokenize import sent_tokenize, word_tokenize

__all__ = [
    "PROTOCOLS",
    "AnswerPrompt",
    "AnswerResult",
    "Answerer",
    "EvalProtocol",
    "adversarial_options",
    "aggregate",
    "amem_bleu1",
    "amem_f1",
    "bootstrap_ci",
    "category_name",
    "check_protocol",
    "evidence_scores",
    "format_table",
    "get_protocol",
    "locomo_f1",
    "locomo_normalize",
    "recall_at_budget",
    "score_answer",
    "sent_tokenize",
    "summarize",
    "word_tokenize",
]
