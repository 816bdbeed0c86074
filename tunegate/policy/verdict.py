"""Verdicts: what a policy says of one config, here, for one kernel, and every reason why."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..reasons import Reason
from ..space.features import uses
from ..space.space import Config, Space
from .env import Environment
from .predicate import MISSING
from .rules import Conditions, Rule
from .traits import KernelTraits

__all__ = ["Inactive", "Possible", "RuleMatch", "RuleState", "Status", "Verdict",
           "rule_state", "match_rule", "judge"]

Status = Literal["excluded", "experimental", "allowed"]


class RuleMatch(BaseModel):
    """An active rule that covers the config, with the loops and features that made it match."""

    model_config = ConfigDict(frozen=True)

    rule: str
    action: Literal["disable", "experimental"]
    title: str
    reason: str
    bugs: tuple[str, ...]
    source: str
    features: dict[str, Any] = {}
    loops: dict[str, list[int]] = {}

    def as_reason(self) -> Reason:
        what = "excluded" if self.action == "disable" else "experimental"
        return Reason(kind="rule", summary=f"{what}: {self.title}", rule=self.rule,
                      source=self.source, bugs=self.bugs,
                      evidence={"features": self.features, "loops": self.loops})


class Possible(BaseModel):
    """A rule that would cover the config if the named unknown facts turned out to hold."""

    model_config = ConfigDict(frozen=True)

    rule: str
    action: Literal["disable", "experimental"]
    title: str
    bugs: tuple[str, ...]
    source: str
    unknown: list[str]


class Inactive(BaseModel):
    """A rule that does not apply here, and why (`when` not met, `until` met, switched off)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    source: str
    why: str


class Verdict(BaseModel):
    """The strongest matching active rule decides: disable > experimental > allowed."""

    model_config = ConfigDict(frozen=True)

    config: dict[str, Any]
    status: Status
    matched: list[RuleMatch]
    possible: list[Possible]
    inactive: list[Inactive]
    features_used: dict[str, Any]
    experimental_features: list[str]

    @property
    def excluded(self) -> bool:
        return self.status == "excluded"

    def reasons(self) -> list[Reason]:
        return [m.as_reason() for m in self.matched]


class RuleState(BaseModel):
    """Whether a rule applies in an environment: active, possible (facts unknown) or inactive."""

    state: Literal["active", "possible", "inactive"]
    why: str = ""
    unknown: list[str] = []


def _check(cond: Conditions, env: Environment, traits: KernelTraits | None
           ) -> tuple[list[str], list[str], list[str]]:
    """(held, failed, unknown) descriptions of each condition that was written."""
    held, failed, unknown = [], [], []
    for key, want in cond.given().items():
        if key == "kernel":
            if traits is None:
                unknown.append("kernel traits (no kernel given)")
                continue
            missing = [t for t in want if t not in traits.traits]
            (failed if missing else held).append(
                f"kernel {traits.name} has no trait {missing[0]}" if missing
                else f"kernel {traits.name} has {', '.join(want)}")
            continue
        fact = env.fact(key)
        if fact is None:
            unknown.append(key)
        elif key == "device":
            (held if fact == want else failed).append(f"device is {fact}, rule wants {want}")
        else:
            ok = fact in want
            (held if ok else failed).append(
                f"{key} {fact} {'satisfies' if ok else 'does not satisfy'} {want.text}")
    return held, failed, unknown


def rule_state(rule: Rule, env: Environment, traits: KernelTraits | None) -> RuleState:
    if not rule.enabled:
        return RuleState(state="inactive", why=f"switched off (enabled = false) at {rule.where()}")
    _, failed, unknown = _check(rule.when, env, traits)
    if failed:
        return RuleState(state="inactive", why="when not met: " + "; ".join(failed))
    if rule.until is not None:
        lifted, not_yet, _ = _check(rule.until, env, traits)
        if lifted and not not_yet and len(lifted) == len(rule.until.given()):
            return RuleState(state="inactive", why="lifted, until met: " + "; ".join(lifted))
    if unknown:
        return RuleState(state="possible", unknown=unknown)
    return RuleState(state="active")


def lookup_in(config: Config, space: Space | None):  # noqa: ANN201 - a closure
    """A predicate lookup: a parameter by name, else the parameter bound to a feature by name."""
    def lookup(name: str) -> Any:
        if name in config.values:
            return config.values[name]
        bound = space.bound_to(name) if space is not None else []
        return config.values[bound[0]] if bound else MISSING

    return lookup


def features_used(config: Config, space: Space | None) -> dict[str, Any]:
    """Feature -> True, or the loop indices that use it, for every feature the config uses."""
    out: dict[str, Any] = {}
    if space is None:
        return out
    for name, param in space.parameters.items():
        for feat in param.features:
            if name not in config.values:
                continue
            hit = uses(feat, config.values[name])
            if hit:
                out[feat] = hit
    return out


def match_rule(rule: Rule, config: Config, space: Space | None,
               used: dict[str, Any] | None = None) -> RuleMatch | None:
    """A `RuleMatch` if the rule covers the config (ignoring whether the rule is active)."""
    used = features_used(config, space) if used is None else used
    hit_features = {f: used[f] for f in rule.features if f in used}
    if rule.features and not hit_features:
        return None
    loops: dict[str, list[int]] = {}
    if rule.match is not None:
        result = rule.match.evaluate(lookup_in(config, space))
        if not result.holds:
            return None
        loops = result.loops
    return RuleMatch(rule=rule.id, action=rule.action, title=rule.title, reason=rule.reason,
                     bugs=rule.bugs, source=rule.where(), features=hit_features, loops=loops)


def judge(rules: list[Rule], config: Config, space: Space | None, env: Environment,
          traits: KernelTraits | None) -> Verdict:
    used = features_used(config, space)
    matched, possible, inactive = [], [], []
    for rule in rules:
        state = rule_state(rule, env, traits)
        if state.state == "inactive":
            inactive.append(Inactive(rule=rule.id, source=rule.where(), why=state.why))
            continue
        m = match_rule(rule, config, space, used)
        if m is None:
            continue
        if state.state == "active":
            matched.append(m)
        else:
            possible.append(Possible(rule=rule.id, action=rule.action, title=rule.title,
                                     bugs=rule.bugs, source=rule.where(), unknown=state.unknown))
    actions = {m.action for m in matched}
    status: Status = ("excluded" if "disable" in actions
                      else "experimental" if "experimental" in actions else "allowed")
    experimental = sorted({f for m in matched if m.action == "experimental" for f in m.features})
    return Verdict(config=dict(config.values), status=status, matched=matched, possible=possible,
                   inactive=inactive, features_used=used, experimental_features=experimental)
