"""Reading policies.toml files: parse leniently, validate every rule, report all problems at once.

Fail closed: a file with any problem yields no rules, and the error names file, line and rule id.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .rules import Rule, RuleSource
from ..errors import TunegateError

__all__ = ["PolicyError", "Problem", "builtin_policy_path", "discover_layers", "load_file"]

SCHEMA_VERSION = 1
_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]")
_SUBTABLE = re.compile(r"^\s*\[\s*rule\.(\w+)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*=")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a policy file."""

    file: str
    line: int | None
    rule: str | None
    message: str
    column: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        rule = f" rule {self.rule!r}:" if self.rule else ""
        return f"{where}:{rule} {self.message}"


class PolicyError(ValueError, TunegateError):
    """A policy that cannot be used; `problems` lists every one found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class _Lines:
    """Line numbers of `[[rule]]` headers and of the keys written under each."""

    def __init__(self, text: str) -> None:
        self.headers: list[int] = []
        self.keys: list[dict[tuple[str, str], int]] = []
        self.top: dict[str, int] = {}
        section = ""
        for n, line in enumerate(text.splitlines(), start=1):
            if _HEADER.match(line):
                self.headers.append(n)
                self.keys.append({})
                section = ""
            elif m := _SUBTABLE.match(line):
                section = m.group(1)
                if self.keys:
                    self.keys[-1][(section, "")] = n
            elif m := _KEY.match(line):
                if self.keys:
                    self.keys[-1].setdefault((section, m.group(1)), n)
                else:
                    self.top.setdefault(m.group(1), n)

    def of(self, index: int, loc: tuple[Any, ...] = ()) -> int | None:
        if index >= len(self.headers):
            return None
        keys = self.keys[index]
        if len(loc) >= 2 and loc[0] in ("when", "until") and isinstance(loc[1], str):
            line = keys.get((loc[0], loc[1])) or keys.get((loc[0], "")) or keys.get(("", loc[0]))
            if line:
                return line
        if loc and isinstance(loc[0], str) and ("", loc[0]) in keys:
            return keys[("", loc[0])]
        return self.headers[index]


def _message(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown key (a typo? see the policies.toml schema in the README)"
    elif err["type"] == "missing":
        msg = "required key is missing"
    msg = msg.removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def _validate_rule(raw: Any, index: int, path: str, layer: str, lines: _Lines,
                   problems: list[Problem]) -> Rule | dict[str, Any] | None:
    line = lines.of(index)
    if not isinstance(raw, dict):
        problems.append(Problem(path, line, None, "each [[rule]] must be a table"))
        return None
    rule_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    if raw.get("enabled") is False and set(raw) <= {"id", "enabled"}:
        return dict(raw, _line=line)  # a switch-off of a lower layer's rule
    try:
        rule = Rule.model_validate(raw)
    except ValidationError as e:
        for err in e.errors():
            problems.append(Problem(path, lines.of(index, tuple(err["loc"])), rule_id,
                                    _message(err)))
        return None
    return rule.model_copy(update={"source": RuleSource(file=path, line=line or 0, layer=layer)})


def load_file(path: str | os.PathLike[str], layer: str = "file"
              ) -> list[Rule | dict[str, Any]]:
    """The rules of one file, in order; switch-offs (`id` + `enabled = false`) as dicts."""
    path = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyError([Problem(path, None, None, f"cannot read: {e.strerror}")]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_POS.search(str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (None, None)
        msg = _TOML_POS.sub("", str(e)).strip()
        raise PolicyError([Problem(path, line, None, f"invalid TOML: {msg}", col)]) from None
    lines = _Lines(text)
    problems: list[Problem] = []
    if data.get("schema") != SCHEMA_VERSION:
        problems.append(Problem(path, lines.top.get("schema", 1), None,
                                f"`schema = {SCHEMA_VERSION}` is required, got "
                                f"{data.get('schema', 'nothing')!r}"))
    for key in sorted(set(data) - {"schema", "rule"}):
        problems.append(Problem(path, lines.top.get(key), None,
                                f"unknown top-level key {key!r} (expected `schema` and [[rule]])"))
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        problems.append(Problem(path, lines.top.get("rule"), None, "`rule` must be [[rule]] tables"))
        raw_rules = []
    rules: list[Rule | dict[str, Any]] = []
    seen: dict[str, int | None] = {}
    for i, raw in enumerate(raw_rules):
        rule = _validate_rule(raw, i, path, layer, lines, problems)
        if rule is None:
            continue
        rid = rule["id"] if isinstance(rule, dict) else rule.id
        if rid in seen:
            problems.append(Problem(path, lines.of(i), rid,
                                    f"duplicate rule id (first defined at line {seen[rid]})"))
            continue
        seen[rid] = lines.of(i)
        rules.append(rule)
    if problems:
        raise PolicyError(problems)
    return rules


def builtin_policy_path() -> Path:
    """The curated policies.toml: inside the installed wheel, or at a checkout's root."""
    packaged = resources.files("tunegate").joinpath("policies.toml")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "policies.toml"


def _project_file(start: Path) -> Path | None:
    """The nearest policies.toml, or pyproject.toml's [tool.tunegate] policy, from `start` up."""
    for folder in (start, *start.parents):
        candidate = folder / "policies.toml"
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
            except (tomllib.TOMLDecodeError, OSError):
                continue
            named = tool.get("tunegate", {}).get("policy")
            if isinstance(named, str):
                return folder / named
    return None


def discover_layers(cwd: str | os.PathLike[str] | None = None,
                    extra: list[str] | None = None) -> list[tuple[str, Path]]:
    """(layer name, file) lowest first: built-in, project, $TUNEGATE_POLICY, then `extra`."""
    builtin = builtin_policy_path()
    layers = [("built-in", builtin)]
    project = _project_file(Path(cwd or os.getcwd()).resolve())
    if project is not None and project.resolve() != builtin.resolve():
        layers.append(("project", project))
    if os.environ.get("TUNEGATE_POLICY"):
        layers.append(("TUNEGATE_POLICY", Path(os.environ["TUNEGATE_POLICY"])))
    layers += [("--policy", Path(p)) for p in extra or []]
    return layers
