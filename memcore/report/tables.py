"""Rendering report tables: the :class:`Table` (Markdown, CSV, LaTeX) and the cell formatting every layout shares
(percentages, changes, intervals, costs). All numbers are percentages unless a cell says otherwise."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcore.eval.aggregate import category_name

CATEGORIES: tuple[int, ...] = (1, 2, 3, 4, 5)


NOT_COMPARABLE = "†"


def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_delta(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def fmt_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return fmt(value) if ci is None else f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def fmt_delta_ci(value: float | None, ci: tuple[float, float, float, int] | None) -> str:
    """``+2.80 [-3.10, +8.90]``: a change and its paired interval (the change alone without one)."""
    if value is None or ci is None:
        return fmt_delta(value)
    return f"{value:+.2f} [{ci[1]:+.2f}, {ci[2]:+.2f}]"


def delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def fmt_cost(key: str, value: float | None) -> str:
    if value is None:
        return "–"
    if key == "tokens_per_conv":
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def category_header(c: int, counts: Sequence[Mapping[int, int]]) -> str:
    ns = sorted({m.get(c, 0) for m in counts})
    n = "/".join(str(v) for v in ns) if ns else "0"
    return f"{c} {category_name(c)} (n={n})"


@dataclass
class Table:
    """A rendered table: display ``columns``/``rows`` (Markdown, LaTeX), ``records`` (CSV, one per run)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    text_columns: int = 3  # leading left-aligned columns (setting + source); the rest are numbers

    def to_markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |"]
        lines.append("|" + "|".join("---" if i < self.text_columns else "---:" for i in range(len(self.columns))) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        buf = io.StringIO()
        fieldnames: list[str] = []
        for rec in self.records:
            fieldnames += [k for k in rec if k not in fieldnames]
        writer = csv.DictWriter(buf, fieldnames=fieldnames, lineterminator="\n")
        writer.writeheader()
        for rec in self.records:
            writer.writerow({k: _csv_value(rec.get(k)) for k in fieldnames})
        return buf.getvalue()

    def to_latex(self) -> str:
        spec = "l" * self.text_columns + "r" * (len(self.columns) - self.text_columns)
        out = [
            f"% {self.title}",
            "% needs \\usepackage{booktabs}",
            "\\begin{table}[t]",
            "\\centering",
            "\\scriptsize",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(latex_escape(c) for c in self.columns) + " \\\\",
            "\\midrule",
        ]
        for i, row in enumerate(self.rows):
            if i and row[0]:
                out.append("\\midrule")
            out.append(" & ".join(latex_escape(cell) for cell in row) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{latex_escape(self.title)}}}", "\\end{table}"]
        if self.notes:
            out += [f"% {latex_escape(n)}" for n in self.notes]
        return "\n".join(out) + "\n"


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else value


_LATEX_ESCAPES = {
    "\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
    "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
    "Δ": "$\\Delta$", "–": "--", "−": "$-$", "†": "$^\\dagger$",
}  # fmt: skip


def latex_escape(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)
