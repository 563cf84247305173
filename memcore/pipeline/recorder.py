"""The runner's :class:`~memcore.pipeline.conversation.ConversationSink`: it scores each prediction (stage 4) and
appends its record to items.jsonl, and keeps what the report needs besides the items: each conversation's
``stats.json`` entry, the seconds per stage and the progress bars. The same sink receives a conversation run in
the runner's threads and one replayed from a worker process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcore.eval.protocols import EvalProtocol
from memcore.interfaces import LazyResource
from memcore.itemlog import ItemWriter
from memcore.llm.usage import UsageTracker, item_usage
from memcore.metrics import Metric
from memcore.pipeline.load import LoadedSlice
from memcore.pipeline.predict import Prediction
from memcore.pipeline.progress import StageBars
from memcore.pipeline.score import score_item
from memcore.timing import StageClock
from memcore.types import Conversation, QAItem


class ItemRecorder:
    """Scores and writes every item of one invocation into ``writer`` under ``protocol`` (with ``metrics`` and the
    ``judge`` when the run judges); each conversation's stats go into ``conv_stats``, seconds into ``clock``."""

    def __init__(
        self,
        writer: ItemWriter,
        data: LoadedSlice,
        protocol: EvalProtocol,
        metrics: Sequence[Metric],
        judge: LazyResource | None,
        *,
        clock: StageClock,
        bars: StageBars,
        conv_stats: dict[str, Any],
    ) -> None:
        self.writer = writer
        self.data = data
        self.protocol = protocol
        self.metrics = tuple(metrics)
        self.judge = judge
        self.clock = clock
        self.bars = bars
        self.conv_stats = conv_stats

    def turns_built(self, n: int) -> None:
        self.bars.build(n)

    def turns_ingested(self, n: int) -> None:
        self.bars.ingested(n)

    def memory_ready(self, conversation: Conversation, stats: dict[str, Any], *, reused: bool, seconds: float) -> None:
        if reused:
            self.bars.build(len(conversation.turns), reused=True)
        self.clock.add("build", seconds)
        self.conv_stats[conversation.conv_id] = stats

    def prefetched(self, seconds: float) -> None:
        self.clock.add("prefetch", seconds)

    def predicted(self, item: QAItem, prediction: Prediction, spent: UsageTracker) -> None:
        """Score ``item``'s ``prediction`` (its calls so far in ``spent``) and append its record to items.jsonl."""
        self.clock.add("retrieve", prediction.retrieve_s)
        self.clock.add("answer", prediction.answer_s)
        with self.clock.stage("score"):
            record = score_item(
                item,
                prediction,
                self.protocol,
                category_name=self.data.categories.get(int(item.category)).name,
                metrics=self.metrics,
                audited=self.data.audited.get(item.item_id),
                judge=self.judge,
            )
        record.usage = item_usage(spent)
        with self.clock.stage("write"):
            self.writer.write(record.to_json())
        self.bars.qa(1)

    def finished(self, conversation: Conversation, memory_after_qa: dict[str, Any] | None) -> None:
        if memory_after_qa is not None:
            self.conv_stats[conversation.conv_id]["memory_after_qa"] = memory_after_qa
