"""The run pipeline (docs/design.md §1), one module per stage; :class:`memcore.runner.Runner` strings them together and
owns concurrency, stop handling and resume.

1. load     ``memcore.pipeline.load``        the LoCoMo slice: cleaning, selection, category filter, audit overlay
2. build    ``memcore.pipeline.build``    build or load each conversation's memory (threads, worker processes,
                                          the snapshot store)
3. predict  ``memcore.pipeline.predict``  retrieve + answer one item (evidence, reply, prompt version, latency)
4. score    ``memcore.pipeline.score``    score a prediction against each gold variant and the judge → an
                                          :class:`~memcore.pipeline.record.ItemRecord` (one line of items.jsonl)
5. report   ``memcore.pipeline.report``   aggregate items.jsonl → metrics.json, cost.json, stats.json, table.md

``memcore.rescore`` re-runs stages 4–5 on an existing ``items.jsonl`` under another protocol, without
re-answering.
"""
