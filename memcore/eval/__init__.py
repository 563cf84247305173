"""Evaluation: protocols (amem | locomo), scoring functions, aggregation, bootstrap CIs, and the answerer."""

from memcore.eval.aggregate import aggregate, category_name, format_table, summarize
from memcore.eval.answerer import Answerer, AnswerPrompt, AnswerResult, adversarial_options
from memcore.eval.bootstrap import bootstrap_ci
from memcore.eval.metrics import amem_bleu1, amem_f1, evidence_scores, locomo_f1, locomo_normalize, recall_at_budget
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.eval.scoring import score_answer, score_evidence
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
    "evidence_scores",
    "format_table",
    "get_protocol",
    "locomo_f1",
    "locomo_normalize",
    "recall_at_budget",
    "score_answer",
    "score_evidence",
    "sent_tokenize",
    "summarize",
    "word_tokenize",
]
