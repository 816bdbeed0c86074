"""Shared hypothesis strategies: policy files (valid, mutated, hostile), predicates, env values.

Every strategy draws from the same vocabulary tunegate validates against (FEATURES, TRAITS,
Helion fields), so valid drafts are really valid and mutations land next to real keys.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tunegate.policy import ENV_FACTS, TRAITS
from tunegate.space.features import FEATURES

FUZZ = settings(max_examples=int(os.environ.get("TUNEGATE_FUZZ_EXAMPLES", "120")),
                deadline=None, derandomize=bool(os.environ.get("CI")),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
"""Settings for the fuzz tests: bounded examples, no deadline, fixed seed in CI."""

RULE_KEYS = ("id", "title", "action", "bugs", "features", "match", "reason", "enabled", "when",
             "until")
CONDITION_KEYS = ("triton", "torch", "python", "cuda", "device", "capability", "kernel")
PREDICATE_WORDS = ("num_warps", "num_stages", "range_num_stages", "range_flatten",
                   "block_sizes", "BLOCK_M", "indexing", "and", "or", "not", "in", "not in",
                   "true", "false", "none", "(", ")", "[", "]", ",", "==", "!=", "<", "<=", ">",
                   ">=", "1", "-3", "2.5", "1e400", "'tensor_descriptor'", '"x"', "__import__",
                   "$", "9" * 40)
HOSTILE_TEXT = ("\x1b[31m", "\x00", "\n", "\r\n", '"""', "'''", "[[rule]]", "\\", "\u202e",
                "#", "=", "\ud7ff", "é", "[rule.when]")


# -- TOML values and text ---------------------------------------------------------------------
def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.booleans(), st.integers(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
        st.sampled_from(HOSTILE_TEXT), st.sampled_from(sorted(FEATURES)),
        st.sampled_from(sorted(TRAITS)), st.sampled_from(["disable", "experimental", "1", "no",
                                                          "off", ">=3.0", "==1!3.*", "cuda"]),
    )


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(RULE_KEYS + CONDITION_KEYS + ("x",))
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=3))


toml_values = st.recursive(_scalars(), _containers, max_leaves=12)
"""Any TOML value, biased towards the names policies use."""


def _string(text: str) -> str:
    # JSON's escapes are TOML's; TOML also wants DEL escaped, and no surrogate pairs.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml(value: Any) -> str:
    """`value` written as a TOML inline value (tomllib has no writer)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_string(k)} = {toml(v)}" for k, v in value.items()) + "}"


class Multiline(str):
    """A string to write as a multi-line TOML string (its content may hold `[[rule]]`)."""


def _multiline(text: str) -> str:
    if "'''" not in text and not re.search(r"[\x00-\x08\x0a-\x1f\x7f]", text.replace("\n", "")):
        return "'''\n" + text + "'''"  # the newline after the opening quotes is not content
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\n"}
    body = "".join(escapes.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 or c == "\x7f" else c)
                   for c in text)
    return '"""' + ("\\n" + body[1:] if body.startswith("\n") else body) + '"""'


def located(rules: list[dict[str, Any]], top: dict[str, Any] | None = None
            ) -> tuple[str, dict[tuple[Any, ...], int]]:
    """A policy file (top-level keys, one [[rule]] per table, sub-tables as [rule.X]) and the
    line each key was written on, by path: `("rule", 0, "when", "kernel")`."""
    lines: list[str] = []
    where: dict[tuple[Any, ...], int] = {}

    def put(path: tuple[Any, ...], key: str, value: Any) -> None:
        where[path] = len(lines) + 1
        text = _multiline(value) if isinstance(value, Multiline) else toml(value)
        lines.extend(f"{_string(key)} = {text}".split("\n"))

    for k, v in (top or {"schema": 1}).items():
        put((k,), k, v)
    for i, rule in enumerate(rules):
        lines += ["", "[[rule]]"]
        where[("rule", i)] = len(lines)
        tables = {k: v for k, v in rule.items() if isinstance(v, dict) and k in ("when", "until")}
        for k, v in rule.items():
            if k not in tables:
                put(("rule", i, k), k, v)
        for name, table in tables.items():
            lines.append(f"[rule.{name}]")
            where[("rule", i, name)] = len(lines)
            for k, v in table.items():
                put(("rule", i, name, k), k, v)
    return "\n".join(lines) + "\n", where


def document(rules: list[dict[str, Any]], top: dict[str, Any] | None = None) -> str:
    """A policy file written from `rules` (see `located`)."""
    return located(rules, top)[0]


# -- valid drafts ---------------------------------------------------------------------------
_ids = st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,5}){0,2}", fullmatch=True)
_predicates = st.sampled_from([
    "range_num_stages > 1", "num_warps < 4 and range_num_stages >= 2", "not range_flatten",
    "num_warps in [2, 8]", "indexing == 'tensor_descriptor'", "BLOCK_M >= 64 or num_stages == 1",
])
_conditions = st.fixed_dictionaries({}, optional={
    "triton": st.sampled_from([">=3.0", "<3.7", ">=3.6.0,<3.9.0", "==3.6.*"]),
    "device": st.sampled_from(["cuda", "hip", "cpu"]),
    "capability": st.sampled_from([">=9.0", "<10"]),
    "kernel": st.lists(st.sampled_from(sorted(TRAITS)), min_size=1, max_size=2, unique=True),
})


_titles = st.one_of(
    st.text(min_size=1, max_size=20),
    st.builds(Multiline, st.one_of(
        st.text(min_size=1, max_size=20),
        st.sampled_from(['[[rule]]\nid = "x"', "x\n[rule.when]\nkernel = 5\n", "a'\nb", 'a"\n"b',
                         "\\\n[meta]", "ends with a quote'", "ends with quotes''"]))),
)


@st.composite
def valid_rule(draw: st.DrawFn, rule_id: str) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": rule_id, "title": draw(_titles),
        "action": draw(st.sampled_from(["disable", "experimental"])),
        "features": draw(st.lists(st.sampled_from(sorted(FEATURES)), min_size=1, max_size=2,
                                  unique=True)),
        "reason": draw(_titles),
    }
    if draw(st.booleans()):
        rule["match"] = draw(_predicates)
    if draw(st.booleans()):
        rule["bugs"] = ["triton-lang/triton#8259"]
    if draw(st.booleans()):
        rule["when"] = draw(_conditions)
    if draw(st.booleans()):
        rule["until"] = {"triton": ">=9.0"}
    return rule


@st.composite
def valid_rules(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = draw(st.lists(_ids, min_size=1, max_size=4, unique=True))
    return [draw(valid_rule(i)) for i in ids]


# -- mutations ------------------------------------------------------------------------------
@st.composite
def retyped_rules(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid rules with one key (possibly inside when/until) set to any TOML value."""
    rules = draw(valid_rules())
    rule = draw(st.sampled_from(rules))
    where = draw(st.sampled_from(["rule", "when", "until"]))
    if where == "rule":
        rule[draw(st.sampled_from(RULE_KEYS + ("colour",)))] = draw(toml_values)
    else:
        table = rule.setdefault(where, {})
        if isinstance(table, dict):
            table[draw(st.sampled_from(CONDITION_KEYS + ("gpu",)))] = draw(toml_values)
    return rules


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    """A valid file edited as text: lines dropped, repeated, swapped or spliced with junk."""
    lines = document(draw(valid_rules())).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "repeat", "swap", "splice", "value", "header"]))
        if op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "repeat":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "splice":
            at = draw(st.integers(0, len(lines[i])))
            junk = draw(st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=8)))
            lines[i] = lines[i][:at] + junk + lines[i][at:]
        elif op == "value" and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + toml(draw(toml_values))
        else:
            lines.insert(i, draw(st.sampled_from(["[[rule]]", "[meta]", "[rule.when]",
                                                  "[rule.until]", "rule = []", "[[rule.when]]",
                                                  'title = """', '"""', "schema = 1"])))
    return "\n".join(lines) + "\n"


@st.composite
def deep_text(draw: st.DrawFn) -> str:
    """Deep nesting of arrays, inline tables or predicate parentheses, in a valid file."""
    depth = draw(st.sampled_from([31, 33, 100, 1000]))
    kind = draw(st.sampled_from(["array", "table", "predicate", "not"]))
    base = document(draw(valid_rules()))
    if kind == "array":
        return base + "x = " + "[" * depth + "]" * depth + "\n"
    if kind == "table":
        return base + "x = " + "{a = " * depth + "1" + "}" * depth + "\n"
    inner = ("(" * depth + "num_warps > 1" + ")" * depth if kind == "predicate"
             else "not " * depth + "num_warps > 1")
    return base + f"match = {_string(inner)}\n"


policy_texts = st.one_of(
    valid_rules().map(document), retyped_rules().map(document), mutated_text(), deep_text(),
    st.builds(lambda top, rules: document(rules, top),
              st.dictionaries(st.sampled_from(["schema", "rule", "meta"]), toml_values,
                            max_size=2), valid_rules()),
)
"""Text of policy files: valid, re-typed, mutated as text, deeply nested, odd top levels."""


@st.composite
def policy_bytes(draw: st.DrawFn) -> bytes:
    """A policy text as bytes, sometimes with bytes that are not UTF-8 spliced in."""
    data = draw(policy_texts).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80",
                                                 b"\x00"])) + data[at:]
    return data


# -- predicates and environment ------------------------------------------------------------
predicate_texts = st.one_of(
    st.lists(st.sampled_from(PREDICATE_WORDS), max_size=12).map(" ".join),
    st.text(max_size=40),
    st.integers(0, 400).map(lambda n: "(" * n + "num_warps > 1" + ")" * n),
    st.integers(0, 12000).map(lambda n: "not " * n + "num_warps > 1"),
)
"""Predicate text: token soup, arbitrary text, deep parentheses, long `not` chains."""

env_keys = st.one_of(st.sampled_from(ENV_FACTS), st.text(max_size=12))
env_values = st.one_of(
    st.text(max_size=20), st.sampled_from(HOSTILE_TEXT),
    st.from_regex(r"[0-9]{1,5000}(\.[0-9]{1,6}){0,3}", fullmatch=True),
    st.sampled_from(["3.6.0", "3.7.0rc1", "9.0", "cuda", "hip", "cpu", "unknown", "1!3.0",
                     "3.6.0+git", "", " ", "NaN", "inf", "-1"]),
)
"""`--env` values: mostly nonsense, some real."""
