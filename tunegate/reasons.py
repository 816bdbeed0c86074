"""Why a config was removed: one value type shared by the policy and the tuner.

No silent exclusion: every config that a rule, a domain, an accuracy check, a compile error or
a timeout removes carries a `Reason`, and `tunegate policy explain` only reads them.
"""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .outcome import Outcome

__all__ = ["Reason", "ReasonKind"]

ReasonKind = Literal["rule"] | Outcome
"""A policy rule removed the config, or tuning did: then the trial's outcome."""

# The words reasons were stored with before they shared the trial outcome's (read as these).
_EARLIER_KINDS = {"accuracy": Outcome.WRONG, "compile": Outcome.COMPILE_ERROR,
                  "crash": Outcome.CRASHED}


class Reason(BaseModel):
    """What removed a config, which rule or check did, where it was written, and the evidence."""

    # Built on first use: `policy explain` imports this model but never makes one (~2 ms).
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: ReasonKind
    summary: str
    rule: str | None = None
    source: str | None = None
    bugs: tuple[str, ...] = ()
    evidence: dict[str, Any] = Field(default_factory=dict)

    @field_validator("kind", mode="before")
    @classmethod
    def _earlier_kind(cls, kind: Any) -> Any:
        return _EARLIER_KINDS.get(kind, kind) if isinstance(kind, str) else kind

    def line(self) -> str:
        """One line for a person: summary, rule and bugs."""
        parts = [self.summary]
        if self.rule:
            parts.append(f"[rule {self.rule}" + (f" at {self.source}]" if self.source else "]"))
        if self.bugs:
            parts.append("(" + ", ".join(self.bugs) + ")")
        return " ".join(parts)
