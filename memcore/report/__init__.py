"""``memcore-report``: gather run dirs into the paper's table layouts (Markdown, CSV, LaTeX) beside the
paper's numbers, with bootstrap CIs, cost, the audited overlay, and plots."""

from memcore.report.ablation_table import ablation_table
from memcore.report.collect import ReportInputError, RunData, find_run_dirs, load_run, load_runs, paper_methods
from memcore.report.main_table import main_table
from memcore.report.reference import PaperNumbers, ReferenceError, default_reference_dir, load_paper_numbers
from memcore.report.summary import RunSummary, cost_summary, summarize_run
from memcore.report.tables import Table

__all__ = [
    "PaperNumbers",
    "ReferenceError",
    "ReportInputError",
    "RunData",
    "RunSummary",
    "Table",
    "ablation_table",
    "cost_summary",
    "default_reference_dir",
    "find_run_dirs",
    "load_paper_numbers",
    "load_run",
    "load_runs",
    "main_table",
    "paper_methods",
    "summarize_run",
]
