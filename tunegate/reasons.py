"""Why a config was removed: one value type shared by the policy and the tuner.

No silent exclusion: every config that a rule, a domain, an accuracy check, a compile error or
a timeout removes carries a `Reason`, and `tunegate policy explain` only reads them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Reason", "ReasonKind"]

ReasonKind = Literal["rule", "accuracy", "compile", "timeout", "crash", "error"]


class Reason(BaseModel):
    """What removed a config, which rule or check did, where it was written, and the evidence."""

    model_config = ConfigDict(frozen=True)

    kind: ReasonKind
    summary: str
    rule: str | None = None
    source: str | None = None
    bugs: tuple[str, ...] = ()
    evidence: dict[str, Any] = Field(default_factory=dict)

    def line(self) -> str:
        """One line for a person: summary, rule and bugs."""
        parts = [self.summary]
        if self.rule:
            parts.append(f"[rule {self.rule}" + (f" at {self.source}]" if self.source else "]"))
        if self.bugs:
            parts.append("(" + ", ".join(self.bugs) + ")")
        return " ".join(parts)
