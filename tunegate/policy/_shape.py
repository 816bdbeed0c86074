"""The exact TOML type of every key of a policy file, checked before any value is interpreted.

Values are never coerced: `enabled = "no"` is a mistake, not a false; `match = ["a > 1"]` is a
mistake, not the text of a list; `schema = true` is not the integer 1. Each check returns the
value with its mistaken parts dropped, so the rest can still be validated and every mistake of
a file is reported at once.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

__all__ = ["DROP", "MAX_ITEMS", "MAX_STRING", "Mistake", "check_conditions", "check_rule",
           "describe"]

MAX_STRING = 10_000
MAX_ITEMS = 1_000
DROP: Any = object()
"""What a check returns for a value that is wrong as a whole."""

Loc = tuple[str | int, ...]


class Mistake(NamedTuple):  # not a dataclass: as immutable, a tenth the cost to create
    """A value of the wrong type or size, at `loc` inside the checked value."""

    loc: Loc
    message: str


Check = Callable[[Any, Loc], tuple[Any, list[Mistake]]]


def describe(value: Any) -> str:
    """`a string 'no'`, `an integer 5`, `an array of 2 items`: a value's TOML type, shortly."""
    if isinstance(value, bool):
        return f"a boolean {str(value).lower()}"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 64 else "of more than 18 digits"
        return f"an integer {text}"
    if isinstance(value, float):
        return f"a float {value!r}"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f"a string {shown!r}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' * (len(value) != 1)}"
    if isinstance(value, dict):
        return "a table"
    return f"a date/time {value}"


def string(value: Any, loc: Loc) -> tuple[Any, list[Mistake]]:
    if not isinstance(value, str):
        return DROP, [Mistake(loc, f"must be a string, got {describe(value)}")]
    if len(value) > MAX_STRING:
        return DROP, [Mistake(loc, f"is {len(value)} characters long; at most {MAX_STRING}")]
    return value, []


def boolean(value: Any, loc: Loc) -> tuple[Any, list[Mistake]]:
    if not isinstance(value, bool):
        return DROP, [Mistake(loc, f"must be true or false, got {describe(value)}")]
    return value, []


def strings(value: Any, loc: Loc) -> tuple[Any, list[Mistake]]:
    if not isinstance(value, list):
        return DROP, [Mistake(loc, f"must be an array of strings, got {describe(value)}")]
    if len(value) > MAX_ITEMS:
        return DROP, [Mistake(loc, f"has {len(value)} items; at most {MAX_ITEMS}")]
    mistakes = [m for i, item in enumerate(value) for m in string(item, loc + (i,))[1]]
    return (DROP if mistakes else value), mistakes


def table(spec: dict[str, Check], what: str) -> Check:
    """A check of a table whose keys must all be in `spec`."""
    def check(value: Any, loc: Loc) -> tuple[Any, list[Mistake]]:
        if not isinstance(value, dict):
            return DROP, [Mistake(loc, f"must be a table ({what}), got {describe(value)}")]
        clean, mistakes = {}, []
        for key, item in value.items():
            if key not in spec:
                mistakes.append(Mistake(loc + (key,), "unknown key (a typo? see the "
                                                      "policies.toml schema in the README)"))
                continue
            checked, found = spec[key](item, loc + (key,))
            mistakes += found
            if checked is not DROP:
                clean[key] = checked
        return clean, mistakes
    return check


_VERSION_FACTS = ("triton", "torch", "python", "cuda", "capability")
check_conditions = table({**{k: string for k in _VERSION_FACTS}, "device": string,
                          "kernel": strings}, "[rule.when] or [rule.until]")
check_rule = table({
    "id": string, "title": string, "action": string, "bugs": strings, "features": strings,
    "match": string, "reason": string, "enabled": boolean, "reproducer": string,
    "when": check_conditions, "until": check_conditions,
}, "[[rule]]")
