"""Verdicts: what a policy says of one config, here, for one kernel, and every reason why."""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..reasons import Reason
from ..space.features import FEATURES, uses
from ..space.space import LAUNCH_DEFAULTS, Config, Space
from .binding import Binding, Site, bind
from .call import CALL_FACTS
from .env import Environment
from .predicate import MISSING
from .rules import Conditions, Rule
from .traits import KernelTraits

__all__ = ["Inactive", "Possible", "RuleMatch", "RuleState", "Status", "Verdict",
           "features_used", "judge", "lookup_in", "match_rule", "rule_state"]

Status = Literal["excluded", "experimental", "allowed"]

# Launch options a rule reads as their default where the config leaves them out (Triton's and
# Helion's default warps are the same); num_stages is not one: a rule on it does not match a
# config that leaves it out.
DEFAULTED = ("num_warps",)


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
    loops: dict[str, list[Any]] = {}  # predicate name -> loops: an index, or "N (P=V, line L)"
    sites: list[Site] = []  # the parameters, loops and lines that made the rule match
    traits: dict[str, str] = {}  # the rule's kernel traits -> the code that showed them
    assumed: dict[str, str] = {}  # problem facts not known, taken as matching: name -> why

    def as_reason(self) -> Reason:
        what = "excluded" if self.action == "disable" else "experimental"
        assumed = "; ".join(self.assumed.values())
        return Reason(kind="rule", summary=f"{what}: {self.title}" + (
                          f" (assumed to match: {assumed})" if assumed else ""),
                      rule=self.rule, source=self.source, bugs=self.bugs,
                      evidence={"features": self.features, "loops": self.loops,
                                "sites": [s.model_dump(mode="json") for s in self.sites],
                                "traits": self.traits, "assumed": self.assumed})


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

    config: Config
    status: Status
    matched: list[RuleMatch]
    possible: list[Possible]
    inactive: list[Inactive]
    features_used: dict[str, Any]
    experimental_features: list[str]
    notes: list[str] = []  # declared bindings that contradict the kernel's source

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


def lookup_in(config: Config, space: Space | None, binding: Binding | None = None,
              scope: frozenset[int] | None = None,
              seen: dict[str, list[Site]] | None = None):  # noqa: ANN201 - a closure
    """A predicate lookup: a parameter by name (a launch option the config leaves out reads as
    its default), else every value of a feature in `scope`.

    A feature with one kernel-wide value reads as that value; with several (several loops,
    several parameters, a per-loop list) as a tuple that matches if any element does. The
    sites read are recorded in `seen`, so a match can name the parameter, loop and line.
    """
    binding = binding or bind(space)

    def lookup(name: str) -> Any:
        if name in config.values:
            return config.values[name]
        if name in CALL_FACTS:
            return binding.fact(name, config.values)
        if name in DEFAULTED:
            return LAUNCH_DEFAULTS[name]
        if name not in FEATURES:
            return MISSING
        sites = binding.sites(name, config.values, scope)
        if seen is not None:
            seen[name] = sites
        if not sites:
            return MISSING
        if len(sites) == 1 and sites[0].element is None and sites[0].loop is None:
            return sites[0].value  # one kernel-wide value: compare it as it is
        return tuple(s.value for s in sites)

    return lookup


def features_used(config: Config, space: Space | None, binding: Binding | None = None,
                  scope: frozenset[int] | None = None) -> dict[str, Any]:
    """Feature -> True, or the loops that use it, for every feature the config uses."""
    return (binding or bind(space)).used(config.values, scope)


def match_rule(rule: Rule, config: Config, space: Space | None,
               used: dict[str, Any] | None = None, *, traits: KernelTraits | None = None,
               binding: Binding | None = None) -> RuleMatch | None:
    """A `RuleMatch` if the rule covers the config (ignoring whether the rule is active).

    `used` is the config's `features_used` (worked out once by a caller that asks many rules);
    `traits` (or a `binding` made from them) aims loop rules at the loops holding their traits.
    """
    if used is not None and rule.features and not any(f in used for f in rule.features):
        return None  # uses none of the rule's features on any loop
    binding = binding or bind(space, traits)
    scope = binding.scope(rule)
    sites: list[Site] = []
    hit_features: dict[str, Any] = {}
    for f in rule.features:
        hits = [s for s in binding.sites(f, config.values, scope) if uses(f, s.value)]
        if hits:
            sites += hits
            hit_features[f] = (True if any(s.loop is None and s.element is None for s in hits)
                               else [s.label() for s in hits])
    if rule.features and not hit_features:
        return None
    loops: dict[str, list[Any]] = {}
    assumed: dict[str, str] = {}
    if rule.match is not None:
        seen: dict[str, list[Site]] = {}
        result = rule.match.evaluate(lookup_in(config, space, binding, scope, seen))
        if not result.holds:
            return None
        assumed = result.unknown
        for name, hits in result.loops.items():
            if name not in seen:  # a parameter read by name: indices into its own list
                loops[name] = hits
                continue
            labels = [seen[name][i].label() for i in hits]
            said = hit_features.get(name) == labels and any(isinstance(x, str) for x in labels)
            if not said:  # a source loop the features already name is not repeated
                loops[name] = labels
            sites += [seen[name][i] for i in hits]
        sites += [s for name, found in seen.items() if name not in result.loops
                  for s in found if len(found) == 1]
    return RuleMatch(rule=rule.id, action=rule.action, title=rule.title, reason=rule.reason,
                     bugs=rule.bugs, source=rule.where(), features=hit_features, loops=loops,
                     sites=list(dict.fromkeys(sites)), assumed=assumed)


def _with_traits(match: RuleMatch, rule: Rule, traits: KernelTraits) -> RuleMatch:
    """The match with the code that showed each of the rule's kernel traits, and its loops."""
    shown = {t: traits.evidence[t] for t in rule.when.kernel if t in traits.evidence}
    loops = dict(match.loops)
    for t, evidence in shown.items():
        if traits.loop_traits.get(t):
            where = ", ".join(map(str, traits.loop_traits[t]))
            loops[t] = [f"{where} ({evidence})"]
    return match.model_copy(update={"traits": shown, "loops": loops})


def judge(rules: list[Rule], config: Config, space: Space | None, env: Environment,
          traits: KernelTraits | None, binding: Binding | None = None) -> Verdict:
    binding = binding or bind(space, traits)
    used = binding.used(config.values)
    matched, possible, inactive = [], [], []
    for rule in rules:
        state = rule_state(rule, env, traits)
        if state.state == "inactive":
            inactive.append(Inactive(rule=rule.id, source=rule.where(), why=state.why))
            continue
        m = match_rule(rule, config, space, used, binding=binding)
        if m is None:
            continue
        if traits is not None and rule.when.kernel:
            m = _with_traits(m, rule, traits)
        if state.state == "active":
            matched.append(m)
        else:
            possible.append(Possible(rule=rule.id, action=rule.action, title=rule.title,
                                     bugs=rule.bugs, source=rule.where(), unknown=state.unknown))
    actions = {m.action for m in matched}
    status: Status = ("excluded" if "disable" in actions
                      else "experimental" if "experimental" in actions else "allowed")
    experimental = sorted({f for m in matched if m.action == "experimental" for f in m.features})
    return Verdict(config=config, status=status, matched=matched, possible=possible,
                   inactive=inactive, features_used=used, experimental_features=experimental,
                   notes=list(binding.notes))
