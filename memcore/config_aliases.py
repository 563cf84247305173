"""Renamed config keys: the one table of old spellings and the pure functions that carry them to the new names.

Three things are capped or counted per question, and each has one name in configs, records and tables: a note
count (``eval.note_cap``), a token cap (``eval.token_cap``, the context handed to the answerer; a method's own
default ``method.token_cap``; the caps the report's recall@cap uses, ``eval.report_token_caps``; the LLM prompt
window ``backbone.prompt_token_cap`` / ``method.prompt_token_cap``) and the tokens used (``tokens_used`` in
``items.jsonl``). An old spelling still works wherever a user types it, with one log line naming the new key:

- a Hydra override (the command line, a sweep's values): :func:`rename_overrides`, before Hydra composes;
- a YAML file (an experiment preset, a method preset of one's own): :func:`rename_config_keys`, when the composed
  config is validated;
- a run dir recorded under the old names: :func:`rename_result_fields` migrates its ``run_state.json`` fields, so the
  run resumes (``memcore.pipeline.rundir.guard_run_dir``);
- a built memory: its snapshot key keeps the spelling it was built under (:func:`snapshot_spelling`);
- a recorded run read back (report, viewer, verify, rescore): its ``config.yaml`` is respelled quietly, and an item
  line or a ``metrics.json`` written before the rename reads through :func:`tokens_used` /
  :func:`evidence_token_cap`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: old dotted key → new dotted key. A ``method.*`` entry applies to whichever method has the old key (each old key
#: belongs to one method family: ``pack_tokens`` MemCoRe's, ``context_budget_tokens`` full_context's,
#: ``backbone_window_tokens`` MemGPT's, ``budget`` FluxMem's).
RENAMED: dict[str, str] = {
    "eval.budget": "eval.note_cap",
    "eval.context_tokens": "eval.token_cap",
    "eval.token_budgets": "eval.report_token_caps",
    "backbone.context_budget_tokens": "backbone.prompt_token_cap",
    "method.pack_tokens": "method.token_cap",
    "method.context_budget_tokens": "method.prompt_token_cap",
    "method.backbone_window_tokens": "method.prompt_token_cap",
    "method.budget": "method.note_cap",
}

#: Sections whose defaults a renamed key's old value may not silently override (their schema defaults are known):
#: a config that sets both spellings to different values there is an error.
_TYPED_SECTIONS = ("eval", "backbone")

#: Build knobs whose snapshot key keeps the spelling the memory was built under (new name → old name), so a rename
#: rebuilds no memory.
_SNAPSHOT_SPELLING: dict[str, str] = {"prompt_token_cap": "backbone_window_tokens"}

#: The item record's old name for the tokens the answerer's context used.
OLD_TOKENS_USED_KEY = "context_tokens"
TOKENS_USED_KEY = "tokens_used"


def renamed_line(old: str) -> str:
    """The one log line an old spelling gets."""
    return f"{old} is renamed: use {RENAMED[old]}"


class RenameConflictError(ValueError):
    """A config sets a key under both its old and its new name, to different values."""


_OVERRIDE = re.compile(r"^(?P<prefix>[+~]*)(?P<key>[A-Za-z_][\w.]*)(?P<rest>=.*)?$", re.S)


def rename_overrides(argv: Iterable[str]) -> tuple[list[str], list[str]]:
    """``argv`` with each Hydra override of an old key (``eval.budget=5``, ``+eval.budget=5``, ``~eval.budget``)
    spelled with the new key, and one :func:`renamed_line` per old key used. Anything else is left as it is."""
    out: list[str] = []
    lines: list[str] = []
    for arg in argv:
        m = _OVERRIDE.match(arg)
        key = m.group("key") if m else None
        if m is None or key not in RENAMED:
            out.append(arg)
            continue
        out.append(f"{m.group('prefix')}{RENAMED[key]}{m.group('rest') or ''}")
        if renamed_line(key) not in lines:
            lines.append(renamed_line(key))
    return out, lines


def rename_config_keys(
    tree: Mapping[str, Any], defaults: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """A plain copy of the config ``tree`` (``{"eval": {...}, "method": {...}, ...}``) with each old key moved to
    its new name, and one :func:`renamed_line` per old key found. The old key's value wins over the new key's
    default (a YAML file that says ``eval.budget: 5`` means it); ``defaults`` (dotted new key → its schema default)
    says what a default is in the typed sections: there, both spellings set to different non-default values raise
    :class:`RenameConflictError`."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in tree.items()}
    lines: list[str] = []
    for old, new in RENAMED.items():
        section, old_key = old.split(".")
        new_key = new.split(".")[1]
        sub = out.get(section)
        if not isinstance(sub, dict) or old_key not in sub:
            continue
        value = sub.pop(old_key)
        if section in _TYPED_SECTIONS and new_key in sub and defaults is not None and new in defaults:
            current = sub[new_key]
            if current != value and current != defaults[new]:
                raise RenameConflictError(
                    f"{old}={value!r} and {new}={current!r} are both set; {old} is renamed: keep {new} only"
                )
        sub[new_key] = value
        lines.append(renamed_line(old))
    return out, lines


def rename_result_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A run's recorded result fields (``run_state.json``'s ``fields``: ``{"eval": {...}, "backbone": {...},
    "method": {...}, ...}``) spelled with the new keys; fields already spelled so are returned unchanged. Pure."""
    out, _ = rename_config_keys(fields)
    return out


def snapshot_spelling(key: str) -> str:
    """The name a build knob has in a snapshot key: its spelling when memories were first built under it."""
    return _SNAPSHOT_SPELLING.get(key, key)


def evidence_token_cap(evidence: Mapping[str, Any]) -> int | None:
    """The token cap a run's ``metrics.json`` discloses (``run.evidence.token_cap``, or ``context_tokens`` in runs
    made before the rename); None for an uncapped run."""
    value = evidence.get("token_cap", evidence.get(OLD_TOKENS_USED_KEY))
    return None if value is None else int(value)


def tokens_used(record: Mapping[str, Any]) -> int:
    """The tokens the answerer's context used, from an item record of either spelling (``tokens_used``, or
    ``context_tokens`` in logs written before the rename); 0 when neither is set."""
    value = record.get(TOKENS_USED_KEY)
    if value is None:
        value = record.get(OLD_TOKENS_USED_KEY)
    return int(value or 0)
