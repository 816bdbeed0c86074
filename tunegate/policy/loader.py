"""Reading policies.toml files: parse leniently, validate every rule, report all problems at once.

Fail closed: a file with any problem yields no rules, and the error names file, line and rule id.
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._shape import check_rule, describe
from ._toml_lines import Layout, scan
from .reproducers import builtin_reproducers, reproducer_file
from .rules import Rule, RuleSource, SwitchOff
from ..errors import TunegateError

__all__ = ["PolicyError", "Problem", "builtin_policy_path", "discover_layers", "load_file"]

SCHEMA_VERSION = 1
MAX_FILE_BYTES = 256 * 1024
MAX_NESTING = 32
MAX_RULES = 10_000
_BARE = re.compile(r"[A-Za-z0-9_-]+")
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


def _read(path: str) -> str:
    """The text of a regular file of at most MAX_FILE_BYTES; FIFOs and devices are refused
    without blocking on them."""
    def fail(message: str, line: int | None = None, column: int | None = None) -> PolicyError:
        return PolicyError([Problem(path, line, None, message, column)])

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise fail(f"cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise fail("not a regular file (a policy cannot be a FIFO, device or folder)")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise fail(f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise fail(f"larger than {MAX_FILE_BYTES // 1024} KiB: not a policy file")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")  # a byte-order mark, as Windows
    except UnicodeDecodeError as e:  # editors write one: not part of the TOML
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise fail(f"not UTF-8: byte {data[e.start:e.start + 1]!r} cannot be decoded",
                   line, column) from None


def _parse(path: str, text: str) -> tuple[dict[str, Any], Layout]:
    """The TOML data and where each key was written; limits checked before tomllib runs."""
    layout = scan(text, MAX_NESTING)
    if layout.too_deep is not None:
        raise PolicyError([Problem(path, layout.too_deep, None,
                                   f"values nested more than {MAX_NESTING} deep")])
    if layout.long_key is not None:
        raise PolicyError([Problem(path, layout.long_key, None,
                                   f"a dotted key of more than {MAX_NESTING} parts")])
    if layout.long_number is not None:
        raise PolicyError([Problem(path, layout.long_number, None,
                                   "a number of more than 100 digits")])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _TOML_POS.search(str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (1, None)
        msg = _TOML_POS.sub("", str(e)).strip()
        raise PolicyError([Problem(path, line, None, f"invalid TOML: {msg}", col)]) from None
    except (ValueError, RecursionError) as e:  # what the scan's limits should already prevent
        raise PolicyError([Problem(path, 1, None, f"cannot be read as TOML: {e}")]) from None
    return data, layout


def _where(loc: tuple[Any, ...]) -> str:
    """A key path as written (`when.kernel.0`); a key that is not a bare word is quoted."""
    return ".".join(str(p) if _BARE.fullmatch(str(p)) else repr(p) for p in loc)


def _message(err: dict[str, Any]) -> str:
    loc = _where(tuple(err["loc"]))
    msg = err["msg"]
    if err["type"] == "missing":
        msg = "required key is missing"
    msg = msg.removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def _to_item(raw: dict[str, Any], loc: tuple[Any, ...], msg: str) -> tuple[Any, ...]:
    """`loc` narrowed to the item of the array there that `msg` quotes, if any.

    A validator of a whole array (`features`, `bugs`) names the bad item, not its index; the
    problem should point at that item's own line."""
    value: Any = raw
    for part in loc:
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            return loc
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str) and repr(item) in msg:
                return loc + (i,)
    return loc


class _FileLoader:
    """Validates one parsed file, collecting every problem with its line."""

    def __init__(self, path: str, layer: str, layout: Layout) -> None:
        self.path, self.layer, self.layout = path, layer, layout
        self.problems: list[Problem] = []

    def problem(self, loc: tuple[Any, ...], rule: str | None, message: str) -> None:
        self.problems.append(Problem(self.path, self.layout.line_of(loc) or 1, rule, message))

    def top_level(self, data: dict[str, Any]) -> list[Any]:
        schema = data.get("schema")
        if type(schema) is not int or schema != SCHEMA_VERSION:
            got = describe(schema) if "schema" in data else "nothing"
            self.problem(("schema",), None,
                         f"`schema = {SCHEMA_VERSION}` (the integer) is required, got {got}")
        for key in sorted(set(data) - {"schema", "rule"}):
            self.problem((key,), None,
                         f"unknown top-level key {key!r} (expected `schema` and [[rule]] tables)")
        raw_rules = data.get("rule", [])
        if not isinstance(raw_rules, list) or not all(isinstance(r, dict) for r in raw_rules):
            self.problem(("rule",), None, "`rule` must be [[rule]] tables")
            return []
        if len(raw_rules) > MAX_RULES:
            self.problem(("rule",), None, f"{len(raw_rules)} rules; at most {MAX_RULES}")
            return []
        return raw_rules

    def rule(self, raw: dict[str, Any], index: int) -> Rule | SwitchOff | None:
        loc = ("rule", index)
        line = self.layout.line_of(loc) or 1
        rule_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        clean, mistakes = check_rule(raw, loc)
        for m in mistakes:
            self.problem(m.loc, rule_id, f"{_where(m.loc[2:]) or '[[rule]]'}: {m.message}")
        source = RuleSource(file=self.path, line=line, layer=self.layer)
        if raw.get("enabled") is False and set(raw) <= {"id", "enabled"}:
            return self._switch_off(raw, loc, source)
        try:
            rule = Rule.model_validate(clean)
        except ValidationError as e:
            for err in e.errors():
                eloc = tuple(err["loc"])
                if err["type"] == "missing" and eloc and eloc[0] in raw:
                    continue  # present with the wrong type: reported above
                self.problem(loc + _to_item(raw, eloc, err["msg"]), rule_id, _message(err))
            return None
        if rule.reproducer is not None and reproducer_file(rule.reproducer, self.path) is None:
            self.problem(loc + ("reproducer",), rule_id, f"reproducer: unknown reproducer "
                         f"{rule.reproducer!r} (built in: {', '.join(builtin_reproducers())}; "
                         "or a .py file relative to this policy file)")
            return None
        return None if mistakes else rule.model_copy(update={"source": source})

    def _switch_off(self, raw: dict[str, Any], loc: tuple[Any, ...], source: RuleSource
                    ) -> SwitchOff | None:
        if "id" not in raw:
            self.problem(loc, None, "`enabled = false` needs the `id` of the rule it switches off")
            return None
        if not isinstance(raw["id"], str):
            return None  # reported by the type check
        try:
            return SwitchOff(id=raw["id"], source=source)
        except ValidationError as e:
            self.problem(loc + ("id",), None, "id: " + _message(e.errors()[0]))
            return None


def load_file(path: str | os.PathLike[str], layer: str = "file") -> list[Rule | SwitchOff]:
    """The rules of one file, in order, and its switch-offs (`id` + `enabled = false`)."""
    path = str(path)
    data, layout = _parse(path, _read(path))
    loader = _FileLoader(path, layer, layout)
    entries: list[Rule | SwitchOff] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(loader.top_level(data)):
        entry = loader.rule(raw, i)
        if entry is None:
            continue
        if entry.id in seen:
            loader.problem(("rule", i), entry.id,
                           f"duplicate rule id (first defined at line {seen[entry.id]})")
            continue
        seen[entry.id] = entry.source.line if entry.source else 0
        entries.append(entry)
    if loader.problems:
        raise PolicyError(loader.problems)
    return entries


def builtin_policy_path() -> Path:
    """The curated policies.toml: inside the installed wheel, or at a checkout's root."""
    packaged = resources.files("tunegate").joinpath("policies.toml")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "policies.toml"


_ROOT_MARKERS = ("pyproject.toml", ".git", ".hg", ".svn", ".jj")


_TOOL_KEYS = ("policy",)


def _pyproject_policy(pyproject: Path) -> Path | None:
    """The file `[tool.tunegate] policy` names, relative to the pyproject.toml's folder; any
    other key in [tool.tunegate] is an error (a misspelt key must not be ignored)."""
    path = str(pyproject)
    data, layout = _parse(path, _read(path))
    tool = data.get("tool", {})
    section = tool.get("tunegate") if isinstance(tool, dict) else None
    if section is None:
        return None

    def fail(loc: tuple[str, ...], message: str) -> PolicyError:
        return PolicyError([Problem(path, layout.line_of(loc) or 1, None, message)])

    if not isinstance(section, dict):
        raise fail(("tool", "tunegate"), "[tool.tunegate] must be a table, got "
                   + describe(section))
    for key in section:
        if key not in _TOOL_KEYS:
            raise fail(("tool", "tunegate", key), f"unknown key {key!r} in [tool.tunegate] "
                       f"(known: {', '.join(_TOOL_KEYS)})")
    if "policy" not in section:
        return None
    named = section["policy"]
    if not isinstance(named, str) or not named:
        raise fail(("tool", "tunegate", "policy"),
                   "[tool.tunegate] policy must be a file name (a string), got "
                   + describe(named))
    return pyproject.parent / named


def _owner(path: Path) -> int | None:
    """The uid that owns `path` itself (not a symlink's target), or None if it cannot be seen."""
    try:
        return path.lstat().st_uid
    except OSError:
        return None


def _check_owner(path: Path, me: int | None) -> None:
    """Refuse a project policy file someone else owns: they could switch rules off for us."""
    owner = _owner(path)
    if me is not None and owner is not None and owner != me:
        raise PolicyError([Problem(str(path), None, None,
                                   f"owned by uid {owner}, not by you (uid {me}): another "
                                   "user's file is never a project policy; remove it, or "
                                   "pass it with --policy if you trust it")])


def _folder_policy(folder: Path, me: int | None) -> Path | None:
    """The policy file `folder` gives: its policies.toml or the one its pyproject.toml names.
    Both at once, naming different files, is an error: which one applies must not be a guess.
    A policies.toml or pyproject.toml someone else owns is an error too."""
    candidate = folder / "policies.toml"
    here = candidate if candidate.exists() or candidate.is_symlink() else None
    pyproject = folder / "pyproject.toml"
    named = None
    if pyproject.exists():
        _check_owner(pyproject, me)
        named = _pyproject_policy(pyproject)
    if here is not None and named is not None and named.resolve() != here.resolve():
        raise PolicyError([Problem(str(pyproject), None, None,
                                   f"[tool.tunegate] policy names {named}, but {here} is "
                                   "beside it: keep one of the two")])
    if named is not None:
        return named  # named by a pyproject.toml we own: trusted whoever owns the file
    if here is not None:
        _check_owner(here, me)
    return here


def _project_file(start: Path) -> Path | None:
    """The project's policy: the nearest policies.toml or [tool.tunegate]-named file, looking
    from `start` up to the project root (a pyproject.toml or VCS root), never into a folder
    someone else owns (the starting one included), and never a file someone else owns (a stray
    /tmp/policies.toml must not switch rules off)."""
    me = os.getuid() if hasattr(os, "getuid") else None
    for folder in (start, *start.parents):
        owner = _owner(folder)
        if owner is None or (me is not None and owner != me):
            return None
        found = _folder_policy(folder, me)
        if found is not None:
            return found
        if any((folder / marker).exists() for marker in _ROOT_MARKERS):
            return None
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
