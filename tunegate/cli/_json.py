"""Every `--json` document the CLI prints, shaped in one place."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

__all__ = ["dump", "environment", "explanation", "rules", "space", "tune_failure", "tuning"]


def dump(data: Any) -> str:
    return json.dumps(data, indent=2, default=str)


def explanation(verdict: Any, env: Any, traits: Any, policy: Any, *, outcome: Any,
                compared_with: str | None, history: Any) -> dict[str, Any]:
    """`policy explain --json`."""
    return {
        "verdict": verdict.model_dump(mode="json"),
        "outcome": outcome,
        "compared_with": compared_with,
        "reasons": [r.model_dump(mode="json") for r in verdict.reasons()],
        "environment": env.model_dump(mode="json"),
        "kernel": {"name": traits.name, "traits": traits.evidence} if traits else None,
        "policy": {"fingerprint": policy.fingerprint(), "layers": policy.layers,
                   "report": policy.layer_report().model_dump(mode="json")},
        "history": history,
    }


def rules(policy: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`policy list --json`."""
    return {"fingerprint": policy.fingerprint(), "rules": rows,
            "layers": policy.layer_report().model_dump(mode="json")}


def environment(env: Any) -> dict[str, Any]:
    """`policy env --json`."""
    return {**env.model_dump(mode="json"), "fingerprint": env.fingerprint()}


def space(total: int, region: Any, params: list[dict[str, Any]],
          removals: list[dict[str, Any]], traits: Any) -> dict[str, Any]:
    """`space show --json`."""
    kernel = None if traits is None else {
        "name": traits.name, "traits": traits.evidence,
        "loop_traits": traits.loop_traits, "features": traits.features,
        "loops": [dataclasses.asdict(loop) for loop in traits.loops],
        "bindings": [dataclasses.asdict(d) for d in region.binding.drivers],
        "notes": list(region.binding.notes)}
    return {"cardinality": total, "after_restrictions": region.upper_bound(),
            "parameters": params, "removals": removals,
            "residual_rules": [r.id for r in region.residual], "kernel": kernel}


def tuning(result: dict[str, Any], layers: Any) -> str:
    """`tune --json`: a result (or a failed run's partial result) with the policy layers."""
    return json.dumps({**result, "policy_layers": layers.model_dump(mode="json")}, indent=2)


def tune_failure(task: str, error: str) -> dict[str, Any]:
    """`tune --json` when no result exists: an empty one with the error."""
    return {"task": task, "best": None, "trials": [], "error": error}
