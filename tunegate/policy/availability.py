"""Availability facts: a feature whose `tl.range` argument the installed Triton does not have.

These are facts about the environment, not bugs, so they are not in policies.toml: they are
rules made from the probed `tl.range` signature, and they explain themselves like any rule.
"""

from __future__ import annotations

from .env import Environment
from .rules import Rule, RuleSource

__all__ = ["RANGE_ARGUMENTS", "availability_rules"]

RANGE_ARGUMENTS = {
    "range_num_stages": "num_stages",
    "range_unroll": "loop_unroll_factor",
    "range_multi_buffer": "disallow_acc_multi_buffer",
    "range_flatten": "flatten",
    "range_warp_specialize": "warp_specialize",
}
"""Feature -> the `tl.range` keyword argument it needs."""


def availability_rules(env: Environment) -> list[Rule]:
    """A disabling rule for each feature whose `tl.range` argument is missing here."""
    if env.range_args is None:  # not probed, or a what-if Triton version: unknown
        return []
    source = RuleSource(file=f"installed triton {env.triton} (tl.range signature)", line=0,
                        layer="environment")
    return [
        Rule(id=f"tl-range-lacks-{arg.replace('_', '-')}", action="disable", features=[feature],
             title=f"the installed Triton's tl.range has no '{arg}' argument",
             reason=f"Configs that use {feature} cannot be compiled by Triton {env.triton}.",
             source=source)
        for feature, arg in RANGE_ARGUMENTS.items() if arg not in env.range_args
    ]
