"""Gating a space: the region a tuner may sample, and how many configs each rule removed.

A rule that depends on one parameter becomes a restriction of that parameter's domain, so
sampling never even draws such configs; any other rule stays a residual predicate that filters
draws. Either way no excluded config ever leaves the region.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Iterator

from ..space.space import Config, Space
from .env import Environment
from .rules import Rule
from .traits import KernelTraits
from .binding import bind
from .verdict import Verdict, judge, match_rule, rule_state
from ..errors import TunegateError

__all__ = ["EmptyRegion", "Region", "Removal", "gate"]

_EXACT_LIMIT = 20_000
_SAMPLES = 4_000


class EmptyRegion(ValueError, TunegateError):
    """Every config of the space is excluded: names the rules that did it."""


@dataclass(frozen=True)
class Removal:
    """How many configs of the whole space one rule removes (on its own)."""

    rule: str
    count: int
    exact: bool
    assumed: bool  # the rule applied only because a fact it needs was unknown


class Region:
    """The configs of `space` that the policy allows here, for this kernel."""

    def __init__(self, space: Space, rules: list[Rule], env: Environment,
                 traits: KernelTraits | None, *, assume_unknown: bool = True) -> None:
        self.space, self.rules, self.env, self.traits = space, rules, env, traits
        self.binding = bind(space, traits)
        states = {r.id: rule_state(r, env, traits).state for r in rules}
        live = {"active", "possible"} if assume_unknown else {"active"}
        self.disabling = [r for r in rules if r.action == "disable" and states[r.id] in live]
        self.assumed = [r.id for r in self.disabling if states[r.id] == "possible"]
        self.allowed: dict[str, list[Any]] = {
            n: list(self._element(n).values()) for n in space.parameters
        }
        self.residual: list[Rule] = []
        for rule in self.disabling:
            if not self._restrict(rule):
                self.residual.append(rule)

    # -- construction -------------------------------------------------------------------
    def _element(self, name: str) -> Any:
        return self.space.parameters[name].domain.scalar

    def _dependencies(self, rule: Rule) -> set[str]:
        """The parameters a rule reads, on the loops it is aimed at."""
        scope = self.binding.scope(rule)
        deps = {p for f in rule.features for p in self.binding.parameters(f, scope)}
        for name, _ in rule.match.names() if rule.match else []:
            deps |= ({name} if name in self.space.parameters
                     else self.binding.parameters(name, scope))
        return deps

    def _match(self, rule: Rule, config: Config, used: dict[str, Any] | None = None) -> bool:
        return match_rule(rule, config, self.space, used, binding=self.binding) is not None

    def _matches_with(self, rule: Rule, name: str, value: Any) -> bool:
        return self._match(rule, self.space.default().replace(**{name: value}))

    def _restrict(self, rule: Rule) -> bool:
        """Narrow one parameter's domain if the rule depends on it alone; False otherwise."""
        if rule.features and not set(rule.features) & self.binding.features():
            return True  # nothing in this space or kernel can use its features
        deps = self._dependencies(rule)
        if not deps:  # reads nothing of this space: it matches every config or none
            if self._match(rule, self.space.default()):
                self.allowed = {n: [] for n in self.allowed}
            return True
        if len(deps) > 1:
            return False
        (name,) = deps
        domain = self.space.parameters[name].domain
        if not domain.per_position:
            self.allowed[name] = [v for v in self.allowed[name]
                                  if not self._matches_with(rule, name, v)]
            return True
        bad = {repr(e) for e in domain.scalar.values()
               if self._matches_with(rule, name, domain.over([e])[0])}
        if domain.cardinality() <= 5_000:  # check that "any loop is bad" is what the rule means
            for value in domain.values():
                if self._matches_with(rule, name, value) != any(repr(e) in bad for e in value):
                    return False
        elif rule.match is not None and not rule.match.is_any_decomposable():
            return False
        self.allowed[name] = [e for e in self.allowed[name] if repr(e) not in bad]
        return True

    # -- queries ------------------------------------------------------------------------
    def verdict(self, config: Config) -> Verdict:
        return judge(self.rules, self.space.validate_config(config), self.space, self.env,
                     self.traits, self.binding)

    def _hit(self, rules: list[Rule], config: Config) -> bool:
        """Whether any of `rules` matches; the config's features are worked out once."""
        used = self.binding.used(config.values)
        return any(self._match(r, config, used) for r in rules)

    def contains(self, config: Config) -> bool:
        return not self._hit(self.disabling, self.space.validate_config(config))

    def _domain_values(self, name: str) -> list[Any]:
        return self.space.parameters[name].domain.over(self.allowed[name])

    def upper_bound(self) -> int:
        """Configs left after the per-parameter restrictions (before residual predicates)."""
        total = 1
        for name in self.space.parameters:
            total *= self.space.parameters[name].domain.count_over(len(self.allowed[name]))
        return total

    def configs(self) -> Iterator[Config]:
        """Every allowed config, in the order of the domains."""
        names = list(self.space.parameters)
        for combo in itertools.product(*(self._domain_values(n) for n in names)):
            config = Config(values=dict(zip(names, combo)))
            if not self._hit(self.residual, config):
                yield config

    def sample(self, rng: random.Random, tries: int = 10_000) -> Config:
        """A random allowed config; `EmptyRegion` if none turns up in `tries` draws."""
        if self.upper_bound() == 0:
            raise self._empty()
        for _ in range(tries):
            values = {}
            for name in self.space.parameters:
                values[name] = self.space.parameters[name].domain.sample_over(
                    self.allowed[name], rng)
            config = Config(values=values)
            if not self._hit(self.residual, config):
                return config
        raise self._empty()

    def neighbors(self, config: Config) -> list[Config]:
        return [c for c in self.space.neighbors(config) if self.contains(c)]

    def _empty(self) -> EmptyRegion:
        names = ", ".join(r.id for r in self.disabling) or "(none)"
        return EmptyRegion(f"every config of the space is excluded (disabling rules: {names})")

    def removals(self) -> list[Removal]:
        """For each disabling rule, how many configs of the whole space it removes."""
        total = self.space.cardinality()
        out = []
        exact = total <= _EXACT_LIMIT
        sample = (list(self.space.configs()) if exact else
                  [self.space.sample(random.Random(i)) for i in range(_SAMPLES)])
        for rule in self.disabling:
            found = [m for c in sample
                     if (m := match_rule(rule, c, self.space, binding=self.binding))]
            count = len(found) if exact else math.floor(len(found) / len(sample) * total)
            assumed = rule.id in self.assumed or any(m.assumed for m in found)
            out.append(Removal(rule.id, count, exact, assumed))
        return out


def gate(space: Space, rules: list[Rule], env: Environment, traits: KernelTraits | None,
         *, assume_unknown: bool = True) -> Region:
    """The region of `space` allowed by `rules` in `env` for a kernel with `traits`."""
    return Region(space, rules, env, traits, assume_unknown=assume_unknown)
