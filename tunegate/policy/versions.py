"""Version gates: PEP 440 specifier sets read as statements about *order*.

A gate asks "is this build before the fix?", not "would pip pick it?". So a pre-release or dev
build of a fixing version is before it (`3.7.0rc1` satisfies `<3.7`, not `>=3.7`), and a local
build is the release it was cut from (`3.6.0+git1a2b` satisfies `==3.6.0`). `packaging` parses;
the comparison is ours, so no installed `packaging` version's pre-release defaults leak in.
"""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import Version
from ..errors import TunegateError

__all__ = ["InvalidGate", "VersionGate", "parse_version"]


class InvalidGate(ValueError, TunegateError):
    """A specifier set or version that cannot be read."""


MAX_LENGTH = 200


def parse_version(text: str) -> Version:
    """A version without its local part (`2.11.0+cu130` -> `2.11.0`)."""
    if not isinstance(text, str) or len(text) > MAX_LENGTH:
        raise InvalidGate(f"not a version: {str(text)[:60]!r}")
    try:
        return Version(Version(text).public)
    except ValueError:  # InvalidVersion, or a number too long for int()
        raise InvalidGate(f"not a version: {text!r}") from None


def _release(v: Version, n: int) -> tuple[int, ...]:
    return (v.release + (0,) * n)[:n]


def _target(spec: Specifier) -> Version:
    """The version a specifier compares with (for `==3.*`, the prefix `3`)."""
    text = spec.version
    target = parse_version(text[:-2] if text.endswith(".*") else text)
    if spec.operator not in ("==", "!=", "===") and text.endswith(".*"):
        raise InvalidGate(f"'.*' is only allowed with == and != in {str(spec)!r}")
    if target.epoch:
        raise InvalidGate(f"a version epoch ('{target.epoch}!') has no place in a gate: "
                          f"{str(spec)!r}")
    if spec.operator == "~=" and len(target.release) < 2:
        raise InvalidGate(f"~= needs at least two release numbers in {str(spec)!r}")
    return target


def _holds(spec: Specifier, v: Version) -> bool:
    op, text = spec.operator, spec.version
    if op == "===":
        return str(v) == text
    target = _target(spec)
    if op in ("==", "!=") and text.endswith(".*"):
        prefix = target.release
        equal = v.epoch == target.epoch and _release(v, len(prefix)) == prefix
        return equal if op == "==" else not equal
    if op == "~=":
        prefix = target.release[:-1]
        return v >= target and _release(v, len(prefix)) == prefix
    return {
        "==": v == target,
        "!=": v != target,
        "<": v < target,
        "<=": v <= target,
        ">": v > target,
        ">=": v >= target,
    }[op]


class VersionGate:
    """A specifier set evaluated by version order; immutable, equal by its text."""

    __slots__ = ("_specs", "text")

    def __init__(self, text: str) -> None:
        if len(text) > MAX_LENGTH:
            raise InvalidGate(f"a version specifier of {len(text)} characters is too long")
        try:
            specs = SpecifierSet(text)
        except (InvalidSpecifier, ValueError):
            raise InvalidGate(f"invalid version specifier {text!r}") from None
        if not list(specs):
            raise InvalidGate(f"empty version specifier {text!r}")
        for spec in specs:
            if spec.operator != "===":
                try:
                    _target(spec)
                except InvalidGate as e:
                    raise InvalidGate(f"invalid version specifier {text!r}: {e}") from None
        self._specs = tuple(specs)
        self.text = text

    def __contains__(self, version: str | Version) -> bool:
        v = version if isinstance(version, Version) else parse_version(version)
        v = Version(v.public)
        return all(_holds(s, v) for s in self._specs)

    def __repr__(self) -> str:
        return f"VersionGate({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VersionGate) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)
