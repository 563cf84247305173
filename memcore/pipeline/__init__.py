"""The run pipeline (docs/design.md §1), one module per stage; :class:`memcore.runner.Runner` strings them together and
owns concurrency, stop handling and resume.

1. load     ``memcore.pipeline.load``        the LoCoMo slice: cleaning, selection, category filter, audit overlay
2. build    ``memcore.pipeline.build``    build or load each conversation's memory (threads, worker processes,
                                          the snapshot store)
3. predict  ``memcore.pipeline.predict``  retrieve + answer one item (evidence, reply, prompt version, latency)
4. score    ``memcore.pipeline.score``    score a prediction against each gold variant and the judge → an
                                          :class:`~memcore.pipeline.record.ItemRecord` (one line of items.jsonl)
5. report   ``memcore.pipeline.report``   aggregate items.jsonl → metrics.json, cost.json, stats.json, table.md

Stages 2 and 3 of one conversation are one job (``memcore.pipeline.conversation``), run where the run's executor
says (``memcore.pipeline.executors``: a thread of the runner, or a worker process,
``memcore.pipeline.worker_retrieval``); its results go to the runner's sink (``memcore.pipeline.recorder``), which
runs stage 4 and writes each item's line.

``memcore.rescore`` re-runs stages 4–5 on an existing ``items.jsonl`` under another protocol, without
re-answering.
"""
