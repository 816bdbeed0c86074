"""Search strategies over a policy region. Each proposes batches of configs it has not proposed
before; the tuner owns budgets, measuring and recording. A strategy never leaves the region.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import ClassVar, Mapping, Sequence

from ..errors import UsageError
from ..policy.region import Region
from ..space.space import Config, InvalidConfig

__all__ = ["STRATEGIES", "Exhaustive", "PatternSearch", "RandomSearch", "Strategy",
           "make_strategy", "whole_first_batch"]

Results = Mapping[Config, float | None]  # config -> median ms, or None if it failed
Prior = Mapping[Config, float]  # config -> its mean rank elsewhere (0 fastest .. 1 slowest)


class Strategy(ABC):
    """Proposes configs in batches; `next_batch` returns [] when it has nothing new."""

    name: ClassVar[str]

    def __init__(self, region: Region, rng: random.Random,
                 points: Sequence[Config] | None = None, batch: int = 8,
                 prior: Prior | None = None) -> None:
        self.region, self.rng, self.batch = region, rng, batch
        self.points = None if points is None else [p for p in points if region.contains(p)]
        self.proposed: set[Config] = set()
        # Configs that ranked well at other problem sizes of this kernel, best first: tried
        # before anything else (those the region allows).
        self.favoured = [c for c in sorted(prior or {}, key=lambda c: (prior or {})[c])
                         if self._allows(c)]

    def _allows(self, config: Config) -> bool:
        """Whether `config` is one this strategy may propose; a config of another space (a
        prior from a key whose list was pruned differently) is not, rather than an error."""
        if self.points is not None:
            return config in self.points
        try:
            return self.region.contains(config)
        except InvalidConfig:
            return False

    def _favoured(self, n: int) -> list[Config]:
        """Up to `n` of the configs that ranked best elsewhere, not proposed yet."""
        out: list[Config] = []
        while self.favoured and len(out) < n:
            out += self._fresh([self.favoured.pop(0)])
        return out

    def _fresh(self, configs: list[Config]) -> list[Config]:
        out = []
        for c in configs:
            if c not in self.proposed:
                self.proposed.add(c)
                out.append(c)
        return out

    def _random(self, n: int, tries: int = 200) -> list[Config]:
        out: list[Config] = []
        for _ in range(tries):
            if len(out) >= n:
                break
            c = (self.rng.choice(self.points) if self.points is not None
                 else self.region.sample(self.rng))
            out += self._fresh([c])
        return out

    @abstractmethod
    def next_batch(self, results: Results) -> list[Config]:
        """Configs to measure next, none of them proposed before."""


class Exhaustive(Strategy):
    """Every allowed config in order: for small spaces and explicit lists."""

    name = "exhaustive"

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self._iter = iter(self.points) if self.points is not None else self.region.configs()

    def next_batch(self, results: Results) -> list[Config]:
        """The favoured configs, then the next ones in order: a whole batch of configs not
        proposed yet (a list that fits one batch is proposed whole, so it can be compiled
        ahead as one, see `whole_first_batch`)."""
        out = self._favoured(self.batch)
        while len(out) < self.batch and (config := next(self._iter, None)) is not None:
            out += self._fresh([config])
        return out


class RandomSearch(Strategy):
    """Uniform draws from the region, without repeats."""

    name = "random"

    def next_batch(self, results: Results) -> list[Config]:
        first = self._favoured(self.batch)
        return first + self._random(self.batch - len(first))


class PatternSearch(Strategy):
    """Random starts, then the unseen neighbours of the best configs; restarts when stuck."""

    name = "pattern"
    keep = 3

    def next_batch(self, results: Results) -> list[Config]:
        timed = sorted((t, c.key(), c) for c, t in results.items() if t is not None)
        if len(timed) < self.keep:
            first = self._favoured(self.batch)
            return first + self._random(self.batch - len(first))
        out: list[Config] = []
        for _, _, best in timed[: self.keep]:
            neighbors = (self.region.neighbors(best) if self.points is None
                         else _nearest(best, self.points))
            self.rng.shuffle(neighbors)
            out += self._fresh(neighbors[: self.batch - len(out)])
            if len(out) >= self.batch:
                break
        return out or self._random(self.batch)


def _nearest(config: Config, points: Sequence[Config]) -> list[Config]:
    """In an explicit list, the points that differ from `config` in one parameter."""
    return [p for p in points
            if sum(p.values.get(k) != v for k, v in config.values.items()) == 1]


# Exhaustive batches are large so that a GPU compiles many configs in parallel at once.
EXHAUSTIVE_BATCH = 64

STRATEGIES: dict[str, type[Strategy]] = {
    s.name: s for s in (Exhaustive, RandomSearch, PatternSearch)
}


def make_strategy(name: str, region: Region, rng: random.Random, *, budget: int,
                  points: Sequence[Config] | None = None, prior: Prior | None = None
                  ) -> Strategy:
    """The strategy called `name`; 'auto' is exhaustive when everything fits the budget.
    `prior` (ranks at other problem sizes) decides which configs come first."""
    if name == "auto":
        size = len(points) if points is not None else region.upper_bound()
        name = "exhaustive" if size <= budget else "pattern"
    if name not in STRATEGIES:
        raise UsageError(f"unknown strategy {name!r} (known: auto, {', '.join(STRATEGIES)})")
    return STRATEGIES[name](region, rng, points,
                            batch=EXHAUSTIVE_BATCH if name == "exhaustive" else 8, prior=prior)


def whole_first_batch(name: str, region: Region, points: Sequence[Config] | None, *,
                      budget: int) -> list[Config] | None:
    """The configs the search's first batch will hold whatever the prior ranks first: the
    allowed configs of a list that the exhaustive strategy proposes in one batch (so they can
    be compiled while the workers start); None where the search decides."""
    if points is None or name not in ("auto", "exhaustive"):
        return None
    if name == "auto" and len(points) > budget:  # pattern search: see make_strategy
        return None
    try:
        allowed = [p for p in points if region.contains(p)]
    except InvalidConfig:  # the search says so, with its context
        return None
    return allowed if len(allowed) <= min(budget, EXHAUSTIVE_BATCH) else None
