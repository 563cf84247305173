"""Method config schemas: a method's config is a dataclass whose fields carry their own metadata, the one
source that validation and the snapshot key read.

``knob(default, build=True, rule=UNIT)`` marks a field as changing the built memory (it is then part of the
snapshot key: :func:`build_keys`) and gives its allowed range (:func:`rules_of`); :func:`check_fields` checks a
plain config dict against the dataclass (unknown keys, types from the annotations, ranges), and
:func:`method_validator` is the one validation path every method's ``MethodSpec.validate_config`` follows:
fields first, then the method's own constructor (its cross-field checks), each problem one
:class:`~memcore.config.ConfigError` line naming the key, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memcore.errors import ConfigError

#: Field-metadata keys: the field changes the built memory (snapshot key); the field's allowed values.
BUILD = "build"
RULE = "rule"


@dataclass(frozen=True)
class Rule:
    """An allowed range or set of values for one numeric or string knob."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[Any, ...] | None = None

    def ok(self, value: Any) -> bool:
        if value is None:
            return True  # None is checked by the type (Optional or not)
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True  # type errors are reported by the type check
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return not (self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi))

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {_num(self.lo)}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {_num(self.hi)}"
        return "any value"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


NONNEG = Rule(lo=0)
POS = Rule(lo=1)
UNIT = Rule(lo=0, hi=1)
TEMPERATURE = Rule(lo=0, hi=2)


def bad_value(key: str, value: Any, allowed: str, where: str = "") -> ConfigError:
    """The one-line error for ``key=value``: ``<key>=<value> is not allowed[ (where)]: allowed <allowed>``."""
    suffix = f" ({where})" if where else ""
    return ConfigError(f"{key}={value!r} is not allowed{suffix}: allowed {allowed}")


# ---------------------------------------------------------------------------------------------- types
def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        inner = " or ".join(_type_name(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(hint)) else inner
    if origin is not None:
        return {list: "a list", dict: "a mapping", tuple: "a list"}.get(origin, str(hint))
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, tuple):
        (arg, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, list | tuple) and all(_type_ok(v, arg) for v in value)
    if origin is dict:
        return isinstance(value, Mapping)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def check_fields(
    cls: type,
    raw: Mapping[str, Any],
    *,
    prefix: str,
    where: str,
    rules: Mapping[str, Rule] | None = None,
    default_numeric: Rule | None = NONNEG,
    ignore: tuple[str, ...] = ("name",),
) -> None:
    """Check ``raw`` against dataclass ``cls``: unknown keys, each value's type (from the field's annotation),
    then its range (``rules[key]``, else ``default_numeric`` for every int/float field). Raises ConfigError."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - known - set(ignore))
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(prefix + c for c in close)}? " if close else ""
        raise ConfigError(
            f"{prefix}{key}={raw[key]!r} is not allowed ({where}): unknown key; {hint}"
            f"known keys: {', '.join(sorted(known))}"
        )
    rules = rules or {}
    for key, value in raw.items():
        if key in ignore or key not in known:
            continue
        hint = hints.get(key, Any)
        if not _type_ok(value, hint):
            raise bad_value(f"{prefix}{key}", value, _type_name(hint), where)
        rule = rules.get(key)
        if rule is None and _is_numeric(hint):
            rule = default_numeric
        if rule is not None and not rule.ok(value):
            raise bad_value(f"{prefix}{key}", value, rule.describe(), where)


def _is_numeric(hint: Any) -> bool:
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return any(a in (int, float) for a in args)


def knob(default: Any = dataclasses.MISSING, *, build: bool = False, rule: Rule | None = None, **kwargs: Any) -> Any:
    """A config field: ``build`` marks it as changing the built memory, ``rule`` is its allowed range or set."""
    metadata = {BUILD: build, **({RULE: rule} if rule is not None else {})}
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def build_keys(cls: type) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` marked ``build`` (in field order): they form the snapshot key."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get(BUILD))


def rules_of(cls: type) -> dict[str, Rule]:
    """The ``rule`` of every field of dataclass ``cls`` that has one."""
    return {f.name: f.metadata[RULE] for f in dataclasses.fields(cls) if RULE in f.metadata}


def check_rules(
    obj: Any, label: str, *, default_numeric: Rule | None = NONNEG, error: type[Exception] = ValueError
) -> None:
    """Enforce on the dataclass instance ``obj`` the same ranges :func:`check_fields` checks on a config dict (each
    field's ``rule``, else ``default_numeric`` for a numeric field), so a config built in code meets them too.
    Raises ``error`` (ValueError) ``<label>: <key>=<value> is not allowed: allowed <...>``. Call it from
    ``__post_init__``."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        rule = f.metadata.get(RULE)
        if rule is None and _is_numeric(hints.get(f.name, Any)):
            rule = default_numeric
        value = getattr(obj, f.name)
        if rule is not None and not rule.ok(value):
            raise error(f"{label}: {f.name}={value!r} is not allowed: allowed {rule.describe()}")


def construct(build: Callable[[], Any], prefix: str) -> Any:
    """Run a method's own config constructor; its ValueError / TypeError becomes one ConfigError line."""
    try:
        return build()
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{prefix}{str(exc).splitlines()[0]}") from None


MethodCheck = Callable[[str, dict[str, Any], dict[str, Any]], None]


def method_validator(
    schema: type,
    *,
    build: Callable[[str, dict[str, Any]], Any] | None = None,
    before: MethodCheck | None = None,
    after: MethodCheck | None = None,
    ignore: tuple[str, ...] = ("name",),
) -> MethodCheck:
    """The validator ``(name, method section, ablation section) -> None`` of a method whose section is ``schema``:
    ``before`` (e.g. a variant's pinned keys), the fields (:func:`check_fields` with the schema's rules), the
    method's own constructor ``build(name, section)``, then ``after`` (e.g. the ablation switches)."""
    rules = rules_of(schema)

    def validate(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
        if before is not None:
            before(name, cfg, ablation)
        check_fields(schema, cfg, prefix="method.", where=f"method {name}", rules=rules, ignore=ignore)
        if build is not None:
            construct(lambda: build(name, cfg), "method.")
        if after is not None:
            after(name, cfg, ablation)

    return validate
