"""Evaluation: the protocol registry (each dataset registers its own), scoring one item under them, aggregation, bootstrap CIs, and the answerer.
The pure scoring functions are :mod:`memcore.metrics.scorers`."""

from memcore.eval.aggregate import aggregate, category_name, format_table, summarize
from memcore.eval.answerer import Answerer, AnswerPrompt, AnswerResult
from memcore.eval.bootstrap import bootstrap_ci
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.eval.scoring import score_answer, score_evidence
from memcore.metrics.scorers.tokenize import sent_tokenize, word_tokenize

__all__ = [
    "PROTOCOLS",
    "AnswerPrompt",
    "AnswerResult",
    "Answerer",
    "EvalProtocol",
    "aggregate",
    "bootstrap_ci",
    "category_name",
    "format_table",
    "get_protocol",
    "score_answer",
    "score_evidence",
    "sent_tokenize",
    "summarize",
    "word_tokenize",
]
