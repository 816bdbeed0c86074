"""Where a rule's `reproducer` is: a built-in one shipped in `tunegate/reproducers/`, or a `.py`
file named relative to the policy file that names it. Only files are looked at here; running a
reproducer is `tunegate.autotune.verify`'s job."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUILTIN_DIR", "builtin_reproducers", "reproducer_file"]

BUILTIN_DIR = Path(__file__).resolve().parents[1] / "reproducers"


def builtin_reproducers() -> list[str]:
    """The names of the reproducers shipped with tunegate."""
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.py") if not p.stem.startswith("_"))


def reproducer_file(name: str, policy_file: str | None) -> Path | None:
    """The file `name` means in a rule of `policy_file`, or None where there is none."""
    if not name.endswith(".py"):
        path = BUILTIN_DIR / f"{name}.py"
        return path if name in builtin_reproducers() else None
    path = Path(name)
    if not path.is_absolute() and policy_file:
        path = Path(policy_file).resolve().parent / path
    return path if path.is_file() else None
