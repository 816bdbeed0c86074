"""Without a reference: the baseline config whose output is expected, and the votes on it.

The baseline is the space default with every feature off; where the policy excludes that one
(a rule on num_stages, say), the allowed config closest to it that uses the fewest features.
After the search, a larger group of configs that agree among themselves and disagree with it
outvotes it, and the run stops. Configs that agree with it wherever it writes and write
elements it leaves unwritten dispute what it writes (`coverage_vote`): two right configs write
the same elements, but a grid or mask sized for another config leaves a tail unwritten (the
baseline wrong), and a buggy unmasked store writes past the end (the wider writer wrong). The
side with more distinct meta-parameter values wins; a wider side replaces the baseline, once,
by its widest writer (one that uses no feature the baseline does not) and the search runs
again; even sides stop the run. An output the baseline writes none of, which configs write,
is voted on alike: a code path that forgets its store (the multi-block path of a kernel whose
one-block path writes the statistics) and one that writes an output the call opts out of
look the same from outside.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any, Iterable

from ..outcome import Outcome
from ..policy.binding import Binding, Driver, bind
from ..policy.predicate import MISSING
from ..policy.region import Region
from ..policy.verdict import Verdict
from ..space.features import uses
from ..space.space import LAUNCH_DEFAULTS, Config, Space
from .evaluator import Trial

__all__ = ["allowed_baseline", "alternatives", "baseline_config", "coverage_vote", "outvoted",
           "wider_writers"]


def baseline_config(space: Space, binding: Binding | None = None) -> Config:
    """The space default with every feature off: the most conservative config.

    `binding` (the region's) also switches off features the kernel's source binds to a
    parameter that declares none, such as `num_stages=INNER_STAGES` in a `tl.range`.
    """
    binding = binding or bind(space)
    values = {n: p.domain.default() for n, p in space.parameters.items()}
    for name, param in space.parameters.items():
        drivers = [d for d in binding.drivers if name in d.parameters]
        if param.domain.per_position:
            features = tuple({*param.features, *(d.feature for d in drivers)})
            values[name] = param.domain.map_positions(
                values[name], lambda v, scalar: _off(v, scalar, features))
            continue
        candidates = [values[name], *param.domain.values()]
        values[name] = next((v for v in candidates if not _drives_on(drivers, values, name, v)),
                            values[name])
    return space.validate_config(values)


def allowed_baseline(region: Region, points: Iterable[Config] | None = None
                     ) -> tuple[Config | None, str | None]:
    """The baseline for a run gated by `region`, and a note when it is not the usual one: the
    usual baseline (`baseline_config`) if the region holds it, else the first of
    `alternatives`. None if the region holds no config at all."""
    usual = baseline_config(region.space, region.binding)
    if region.contains(usual):
        return usual, None
    ranked = alternatives(region, points)
    if not ranked:
        return None, None
    rules = ", ".join(m.rule for m in region.verdict(usual).matched)
    return ranked[0].config, (
        f"the usual baseline config {usual.text()} is excluded here ({rules}); results are "
        f"compared with {ranked[0].config.text()}, the {ranked[0].status} config closest to it")


def alternatives(region: Region, points: Iterable[Config] | None = None) -> list[Verdict]:
    """The allowed configs other than the usual baseline, from `points` (a config list) or the
    region's configs, best baseline first: fewest features on, then fewest values apart from
    the usual baseline; experimental ones after every allowed one."""
    usual = baseline_config(region.space, region.binding)
    pool = list(points) if points is not None else [
        *region.neighbors(usual), *itertools.islice(region.configs(), 512)]
    verdicts = [v for v in (region.verdict(c) for c in dict.fromkeys(pool) if c != usual)
                if not v.excluded]

    def rank(i: int) -> tuple[bool, int, int, int]:
        v = verdicts[i]
        on = sum(1 for value in v.features_used.values() if value)
        apart = sum(1 for n in usual if v.config.get(n) != usual[n])
        return (v.status == "experimental", on, apart, i)

    return [verdicts[i] for i in sorted(range(len(verdicts)), key=rank)]


def _drives_on(drivers: list[Driver], values: dict[str, Any], name: str, value: Any) -> bool:
    """Whether any driver turns its feature on when parameter `name` takes `value`."""
    trial = {**values, name: value}
    return any(bool(uses(d.feature, d.value(trial))) for d in drivers
               if d.value(trial) is not MISSING)


def _off(value: Any, domain: Any, features: tuple[str, ...]) -> Any:
    """`value` if it uses none of `features`, else the first value of `domain` that does not."""
    if not any(uses(f, value) for f in features):
        return value
    return next((x for x in domain.values() if not any(uses(f, x) for f in features)), value)


def outvoted(trials: list[Trial], baseline: Config, compared_with: str) -> str | None:
    """Why the baseline looks wrong, if a larger group of configs agree among themselves and
    disagree with it than agree with it; None if it stands."""
    votes = Counter(t.vote for t in trials if t.vote is not None and t.config != baseline)
    if not votes:
        return None
    group, size = votes.most_common(1)[0]
    support = sum(1 for t in trials if t.status is Outcome.OK and t.config != baseline)
    # A larger agreeing group outvotes the baseline; and where no other config agrees with
    # the baseline, any dissent leaves its output unsupported: with three configs that all
    # disagree, the baseline is no likelier to be the right one than either other.
    if not ((size > support and size >= 2) or support == 0):
        return None
    members = [t.config.text() for t in trials if t.vote == group and t.config != baseline]
    dissent = sum(votes.values())
    if size >= 2:
        said = f"{size} configs agree among themselves and disagree"
    elif dissent == 1:
        said = "1 config disagrees"
    else:
        said = f"{dissent} configs disagree among themselves and"
    return (f"the baseline config looks wrong: {said} with {compared_with} (e.g. "
            f"{members[0]}), against {support} other config(s) that agree with it")


def wider_writers(trials: list[Trial], baseline: Config) -> list[Trial]:
    """The configs found to write elements the baseline leaves unwritten, while agreeing with
    it on every element it writes (`check.written_beyond`), the most such elements first."""
    found = [t for t in trials if t.config != baseline and t.status is Outcome.WRONG
             and t.reason is not None and t.reason.evidence.get("beyond")]
    return sorted(found, key=lambda t: -t.reason.evidence["beyond"])  # type: ignore[union-attr]


def coverage_vote(trials: list[Trial], baseline: Config, compared_with: str, region: Region
                  ) -> tuple[str, Config | None] | None:
    """Where configs write elements the baseline leaves unwritten (`wider_writers`: of an
    output it leaves wholly unwritten too) and the baseline's side does not outnumber them:
    why its writes are in doubt, and the widest writer to compare with instead (one that uses
    no feature the baseline does not), or None where the sides are even or no such config
    exists (the run stops). None where no config
    writes wider, or the baseline's side (itself and the configs that agree with it) is the
    larger: the wider writers stay rejected.
    The sides are counted in distinct meta-parameter values, launch options aside: the
    num_warps variants of one block write the same elements, and vote once."""
    wider = wider_writers(trials, baseline)
    if not wider:
        return None
    ours = {_written_by(baseline), *(_written_by(t.config) for t in trials
                                     if t.status is Outcome.OK and t.config != baseline)}
    theirs = {_written_by(t.config) for t in wider} - ours
    if len(theirs) < len(ours):
        return None
    first = wider[0]
    evidence = first.reason.evidence  # type: ignore[union-attr]
    what = (f"output {evidence['argument']}, which it writes none of" if evidence.get("whole")
            else f"elements of {evidence['argument']} it leaves unwritten "
                 f"({evidence['beyond']} of {evidence['total']})")
    why = (f"the baseline config looks wrong: {len(theirs)} config value(s) (e.g. "
           f"{first.config.text()}) agree with {compared_with} wherever it writes and also "
           f"write {what}, against {len(ours)} that write what it writes")
    if len(theirs) == len(ours):
        return why, None
    own = _features_on(region, baseline)
    return why, next((t.config for t in wider if _features_on(region, t.config) <= own), None)


def _written_by(config: Config) -> tuple[tuple[str, str], ...]:
    """What decides the elements a config writes: its values other than launch options."""
    return tuple(sorted((k, repr(v)) for k, v in config.values.items()
                        if k not in LAUNCH_DEFAULTS))


def _features_on(region: Region, config: Config) -> set[str]:
    return {f for f, value in region.verdict(config).features_used.items() if value}
