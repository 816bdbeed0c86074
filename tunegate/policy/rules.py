"""A policy rule as written in policies.toml, validated by pydantic."""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
import re
from typing import Annotated, Any, Literal

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer,
                      field_validator, model_validator)

from ..space.features import FEATURES, feature
from ..space.domains import Boolean, Choice, IntRange, PowerOfTwo
from ..space.helion import HELION_FIELDS, field_element
from ..space.space import LAUNCH_OPTIONS
from .call import CALL_FACTS
from .predicate import Predicate
from .traits import TRAITS
from .versions import VersionGate

__all__ = ["ACTIONS", "Conditions", "Rule", "RuleSource", "SwitchOff"]

ACTIONS = ("disable", "experimental")
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_BUG = re.compile(r"([\w.-]+/[\w.-]+#\d+|https?://\S+|[\w.-]+ [\w.-]+ release)")
_CONSTEXPR = re.compile(r"[A-Z][A-Z0-9_]*")
_DTYPE = re.compile(r"bool|(bfloat|float|complex|q?u?int|bits)\d+(x\d+)?(_[a-z0-9]+)*")
"""How torch names a dtype ('float16', 'float8_e4m3fn', 'uint8'): what `dtypes` holds."""
_REPRODUCER = re.compile(r"[a-z0-9_]+|[^\0]*\.py")


def _gate(value: Any) -> Any:
    if isinstance(value, VersionGate) or value is None:
        return value
    if not isinstance(value, str):
        raise ValueError(f"a version specifier must be a string, got {type(value).__name__}")
    return VersionGate(value)


def _predicate(value: Any) -> Any:
    if isinstance(value, Predicate) or value is None:
        return value
    if not isinstance(value, str):
        raise ValueError(f"a predicate must be a string, got {type(value).__name__}")
    return Predicate(value)


def _kind(value: Any) -> str:
    """What sort of value a predicate literal or a config value is."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "list"


def _domain_kinds(domain: Any) -> frozenset[str] | None:
    """The sorts of value a domain holds; None where any value goes."""
    if isinstance(domain, (PowerOfTwo, IntRange)):
        return frozenset({"number"})
    if isinstance(domain, Boolean):
        return frozenset({"bool"})
    if isinstance(domain, Choice):
        return frozenset(_kind(c) for c in domain.choices)
    return None


def _name_kinds() -> dict[str, frozenset[str]]:
    """Per known Helion field, launch option, feature and problem fact, the sorts of value it
    can read as.

    A feature reads as the values of the parameters that carry it, or as a kernel's own
    true/false (a trait); a feature no Helion field carries is left unchecked."""
    kinds: dict[str, frozenset[str]] = {"num_ctas": frozenset({"number"})}
    by_feature: dict[str, frozenset[str]] = {}
    for name in HELION_FIELDS:
        element, features = field_element(name)
        found = _domain_kinds(element)
        if found is None:
            continue
        kinds[name] = found
        for f in features:
            by_feature[f] = by_feature.get(f, frozenset({"bool"})) | found
    facts = {"dtypes": frozenset({"string"}), "element_bytes": frozenset({"number"}),
             "tile_bytes": frozenset({"number"})}
    return {**by_feature, **kinds, **facts}


_NAME_KINDS = _name_kinds()
_ORDERED = {"<", "<=", ">", ">="}


def _items(op: str, literal: Any) -> list[Any]:
    return list(literal) if op in ("in", "not in") and isinstance(literal, tuple) else [literal]


def _mismatch(name: str, op: str, literal: Any) -> str | None:
    """Why comparing `name` with `literal` by `op` is a type mismatch, or None if it is not."""
    kinds = _NAME_KINDS.get(name)
    if kinds is None:
        return None
    for item in _items(op, literal):
        kind = _kind(item)
        if kind not in kinds or (op in _ORDERED and kind not in ("number", "string")):
            return (f"{name} holds {' or '.join(sorted(kinds))} values, compared with "
                    f"{item!r} (a {kind}) by {op!r}: the comparison never depends on the config")
    return None


def _constant(name: str, op: str, literal: Any) -> str | None:
    """Why comparing `name` with `literal` by `op` comes out the same for every config (an
    empty list; a value the name never holds: a misspelt dtype or choice), or None."""
    items = _items(op, literal)
    if op in ("in", "not in") and not items:
        return f"{name} {op} [] is constant: an empty list never holds {name}'s value"
    if op in _ORDERED:
        return None
    return next(filter(None, (_never_holds(name, item) for item in items)), None)


def _never_holds(name: str, value: Any) -> str | None:
    """Why `name` can never hold the string `value`, or None."""
    if not isinstance(value, str):
        return None
    if name == "dtypes":
        return None if _DTYPE.fullmatch(value) else (
            f"{value!r} is not a dtype name as torch writes it ('float16', 'bfloat16', "
            "'float32', 'int8', ...): dtypes never holds it")
    element = field_element(name)[0] if name in HELION_FIELDS else None
    if isinstance(element, Choice) and value not in element.choices:
        known = ", ".join(repr(c) for c in element.choices)
        return f"{name} is never {value!r} (its values: {known})"
    return None


Gate = Annotated[
    VersionGate, BeforeValidator(_gate), PlainSerializer(lambda g: g.text, return_type=str)
]
PredicateField = Annotated[
    Predicate, BeforeValidator(_predicate), PlainSerializer(lambda p: p.text, return_type=str)
]


def _kebab(value: str) -> str:
    if not _ID.fullmatch(value):
        raise ValueError(f"rule id {value!r} must be lowercase kebab-case, like 'my-rule-1'")
    return value


class RuleSource(BaseModel):
    """Where a rule was written: the file, the line of its `[[rule]]` and the layer."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    layer: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


class SwitchOff(BaseModel):
    """A `[[rule]]` of only `id` and `enabled = false`: switches off a lower layer's rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    source: RuleSource

    @field_validator("id")
    @classmethod
    def _kebab(cls, value: str) -> str:
        return _kebab(value)


class Conditions(BaseModel):
    """Facts that must all hold (`[rule.when]`) or that lift a rule once they hold (`until`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    triton: Gate | None = None
    torch: Gate | None = None
    python: Gate | None = None
    cuda: Gate | None = None
    device: Literal["cuda", "hip", "cpu"] | None = None
    capability: Gate | None = None
    kernel: tuple[str, ...] = ()

    @field_validator("kernel")
    @classmethod
    def _known_traits(cls, traits: tuple[str, ...]) -> tuple[str, ...]:
        for t in traits:
            if t not in TRAITS:
                raise ValueError(f"unknown kernel trait {t!r} (known: {', '.join(TRAITS)})")
        return traits

    def given(self) -> dict[str, Any]:
        """The keys that were written, with their values, in the order the fields are declared
        (not the written set's: its order changes from run to run with string hashing)."""
        return {k: getattr(self, k) for k in type(self).model_fields
                if k in self.model_fields_set and getattr(self, k)}

    def is_empty(self) -> bool:
        return not self.given()


class Rule(BaseModel):
    """One `[[rule]]` of a policy file."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    id: str
    title: str
    action: Literal["disable", "experimental"]
    bugs: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    match: PredicateField | None = None
    reason: str
    enabled: bool = Field(default=True, strict=True)
    when: Conditions = Field(default_factory=Conditions)
    until: Conditions | None = None
    # A kernel and task that show the bug (see tunegate.autotune.verify); it decides nothing
    # about configs, so it is left out of dumps and of the policy's fingerprint.
    reproducer: str | None = Field(default=None, exclude=True)
    source: RuleSource | None = Field(default=None, exclude=True)

    @field_validator("id")
    @classmethod
    def _kebab(cls, value: str) -> str:
        return _kebab(value)

    @field_validator("bugs")
    @classmethod
    def _bug_refs(cls, bugs: tuple[str, ...]) -> tuple[str, ...]:
        for b in bugs:
            if not _BUG.fullmatch(b):
                raise ValueError(f"bug reference {b!r} must look like 'owner/repo#123' or a URL")
        return bugs

    @field_validator("features")
    @classmethod
    def _known_features(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            feature(name)
        return names

    @field_validator("match")
    @classmethod
    def _known_names(cls, pred: Predicate | None) -> Predicate | None:
        if pred is None:
            return pred
        if not pred.names():
            raise ValueError(f"match {pred.text!r} names nothing of the config or the problem: "
                             "it is constant, so it would match every config or none")
        for name, pos in pred.names():
            if not (name in FEATURES or name in HELION_FIELDS or name in LAUNCH_OPTIONS
                    or name in CALL_FACTS or _CONSTEXPR.fullmatch(name)):
                raise ValueError(
                    f"unknown name {name!r} at column {pos + 1} of match {pred.text!r}: use a "
                    "feature, a Helion config field, a launch option, a problem fact "
                    f"({', '.join(CALL_FACTS)}) or an UPPER_CASE constexpr"
                )
        for name, op, literal, pos in pred.comparisons():
            why = _mismatch(name, op, literal)
            if why is not None:
                raise ValueError(f"type mismatch at column {pos + 1} of match {pred.text!r}: "
                                 + why)
            why = _constant(name, op, literal)
            if why is not None:
                raise ValueError(f"at column {pos + 1} of match {pred.text!r}: {why}")
        return pred

    @field_validator("reproducer")
    @classmethod
    def _reproducer_name(cls, name: str | None) -> str | None:
        if name is not None and not _REPRODUCER.fullmatch(name):
            raise ValueError(f"reproducer {name!r} must be a built-in reproducer's name "
                             "(lowercase, like 'store_load') or a .py file")
        return name

    @field_validator("until")
    @classmethod
    def _until_not_empty(cls, until: Conditions | None) -> Conditions | None:
        if until is not None and until.is_empty():
            raise ValueError("[rule.until] must give at least one condition")
        return until

    @model_validator(mode="after")
    def _narrow(self) -> "Rule":
        if not self.features and self.match is None and not self.when.kernel:
            raise ValueError("a rule needs `features`, `match` or `when.kernel`, or it would "
                             "match every config everywhere")
        return self

    def where(self) -> str:
        return str(self.source) if self.source else "(built in code)"
