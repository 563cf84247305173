"""The one exception type the data layer raises for bad input."""

from __future__ import annotations

from pathlib import Path

DEFAULT_HINT = "Fix the file, or fetch a clean official copy with `python scripts/get_locomo.py`."


class DataError(ValueError):
    """Malformed or missing dataset data.

    The message names the file, the conversation (sample_id and/or index; ``unit`` names what it is, e.g. a
    ``question`` of a dataset whose questions each bring their own history) and the field, and ends with what
    to do. The parts are also kept as attributes for tests and callers.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: Path | str | None = None,
        conversation: str | None = None,
        field: str | None = None,
        hint: str | None = DEFAULT_HINT,
        unit: str = "conversation",
    ) -> None:
        self.problem = problem
        self.unit = unit
        self.path = str(path) if path is not None else None
        self.conversation = conversation
        self.field = field
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path:
            where.append(self.path)
        if self.conversation:
            where.append(f"{self.unit} {self.conversation}")
        if self.field:
            where.append(f"field {self.field!r}")
        head = ", ".join(where)
        msg = f"{head}: {self.problem}" if head else self.problem
        if not msg.endswith((".", "?", "!")):
            msg += "."
        return f"{msg} {self.hint}" if self.hint else msg

    def __reduce__(self) -> tuple[object, ...]:  # keep kw-only fields across pickling (worker processes)
        return (_rebuild, (self.problem, self.path, self.conversation, self.field, self.hint, self.unit))


def _rebuild(
    problem: str, path: str | None, conversation: str | None, field: str | None, hint: str | None, unit: str
) -> DataError:
    return DataError(problem, path=path, conversation=conversation, field=field, hint=hint, unit=unit)
