"""The pure per-item scoring functions the metrics and protocols apply: :mod:`.answer` (an answer against the
gold, as A-MEM's and the official LoCoMo evaluation code score it) and :mod:`.evidence` (retrieved dia_ids against
the gold evidence ids). A subpackage, not a module of :mod:`memcore.metrics`, so the metric registry's folder scan
does not take it for a metric."""
