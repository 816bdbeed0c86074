"""A task's problem facts (dtypes, shapes) for the rules that read them, made only when needed.

A rule's match may read facts of the call (see `policy.call`); a task's tune has no call, so
its facts come from draw 0 of its inputs, made without data, and only when a rule that may apply
to this kernel reads one.
"""

from __future__ import annotations

from typing import Any

from ..policy import Environment, KernelTraits, Policy, rule_state
from ..policy.binding import bind
from ..policy.call import CALL_FACTS
from ..space.space import Space
from .task import Task

__all__ = ["with_problem_facts"]


def _reads_call(policy: Policy, env: Environment, traits: KernelTraits, space: Space) -> bool:
    """Whether a rule that may apply to this kernel reads a problem fact in its match."""
    used = bind(space, traits).features()
    return any(r.match is not None and rule_state(r, env, traits).state != "inactive"
               and (not r.features or set(r.features) & used)
               and any(n in CALL_FACTS for n, _ in r.match.names())
               for r in policy.effective(env))


def _host_draw(task: Task, seed: int) -> dict[str, Any]:
    """Draw 0 of the task's inputs without data where it can be (on torch's "meta" device:
    the facts are dtypes and shapes, and a 8192x8192 draw on the CPU takes a second), else
    made on the host; {} if both fail (the facts are then unknown, and the rules reading them
    are assumed to match)."""
    for device in ("meta", "cpu"):  # meta fails for inputs made from data (.item(), indexing)
        try:
            args = task.make_inputs(seed, device)
        except Exception:  # noqa: BLE001 - the user's code; the worker reports it properly
            continue
        if isinstance(args, dict):
            return args
    return {}


def with_problem_facts(traits: KernelTraits, task: Task, policy: Policy, env: Environment,
                       seed: int) -> KernelTraits:
    """`traits` with the task's problem facts where an applicable rule reads them."""
    if not _reads_call(policy, env, traits, task.space):
        return traits
    return traits.called_with(_host_draw(task, seed))
