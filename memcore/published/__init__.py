"""Answer files other systems published for LoCoMo, imported as runs of the harness.

A vendor's per-question answer file (its layout one of :data:`memcore.published.layouts.LAYOUTS`) is parsed into
:class:`~memcore.published.records.PublishedRecord` values, mapped to the dataset's QA items by conversation and
index (never by question text: LoCoMo repeats question texts within a conversation), scored by the harness's own
protocols like any run and written as a normal run directory (:mod:`memcore.published.importer`). The vendor's own
grades are kept apart from any J the harness computes ("J as published", :mod:`memcore.eval.published`).
Layouts and the generic JSON Lines format are documented in ``docs/published.md``.
"""
