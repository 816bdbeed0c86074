"""`tunegate policy verify`: run each rule's reproducer here and say whether its bug is still
present, fixed here, not reproduced (an intermittent bug that did not show in the launches
made, which proves no fix), or not testable here.

A rule's `until` is a guess about a future release; this checks it on the machine at hand. The
reproducer's task is checked over exactly the configs the rule covers, against the baseline
config with every feature off, in isolated workers as tuning does (so a crash or a sticky CUDA
error costs one config). The exit code says whether every tested rule is in the state the
policy assumes: present where the rule applies, fixed where its `until` lifted it; a bug not
reproduced agrees with either.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Sequence

from pydantic import BaseModel, computed_field

from ..errors import TunegateError
from ..outcome import Outcome
from ..policy import Environment, Policy, detect_traits
from ..policy.binding import bind
from ..policy.rules import Rule
from ..policy.verdict import match_rule, rule_state
from ..space.space import Config
from .evaluator import CheckFailed, Evaluator, Trial
from .pool import WorkerPool
from .reproducer import Reproducer, load_reproducer
from .stress import StressCheck
from .tuner import baseline_config
from .worker import BaselineFailed, TaskRef, WorkerSetupError

__all__ = ["EXIT_DIFFERS", "ConfigOutcome", "RuleCheck", "VerifyError", "exit_code",
           "render_checks", "verify"]

EXIT_DIFFERS = 3
"""`policy verify`'s exit code when a tested rule's bug is not in the state the policy assumes."""

State = Literal["present", "fixed", "not_reproduced", "not_testable"]
_DRAWS_FOR_STRESS = 12


class VerifyError(ValueError, TunegateError):
    """`policy verify` was asked for a rule the policy does not have."""


class ConfigOutcome(BaseModel):
    """What one config the rule covers (or the baseline) did in the reproducer."""

    config: str
    status: str
    checked: str
    summary: str = ""
    evidence: dict[str, Any] = {}


class RuleCheck(BaseModel):
    """One rule's verification: the state found, the state the policy assumes, and why."""

    rule: str
    source: str
    reproducer: str | None
    state: State
    assumed: Literal["present", "fixed"] | None = None  # None: not tested
    why: str
    baseline: str | None = None
    outcomes: list[ConfigOutcome] = []
    until: str | None = None  # for a bug fixed here: the TOML that lifts the rule

    @computed_field  # type: ignore[prop-decorator]
    @property
    def agrees(self) -> bool:
        """Whether the state found is the one the policy assumes (untested rules, and
        intermittent bugs not reproduced, agree)."""
        return self.state in ("not_testable", "not_reproduced") or self.state == self.assumed


def _select(policy: Policy, rule_ids: Sequence[str]) -> list[Rule]:
    """The named rules, else every enabled rule that names a reproducer."""
    if not rule_ids:
        return [r for r in policy.rules if r.reproducer is not None and r.enabled]
    known = {r.id: r for r in policy.rules}
    unknown = [i for i in rule_ids if i not in known]
    if unknown:
        raise VerifyError(f"no rule {unknown[0]!r} in this policy (`tunegate policy list` "
                          "shows its rules)")
    return [known[i] for i in dict.fromkeys(rule_ids)]


def verify(policy: Policy, env: Environment, rule_ids: Sequence[str] = (), *, seed: int = 0,
           timeout: float | None = None) -> list[RuleCheck]:
    """Verify the named rules (default: every rule with a reproducer) in `env`; without a
    GPU, under the interpreter."""
    from .backend import interpret_without_gpu

    interpret_without_gpu()
    return [_verify_rule(rule, env, seed, timeout) for rule in _select(policy, rule_ids)]


def exit_code(checks: Iterable[RuleCheck]) -> int:
    """0 if every tested rule is in the state the policy assumes, else EXIT_DIFFERS."""
    return 0 if all(c.agrees for c in checks) else EXIT_DIFFERS


def _untestable(rule: Rule, why: str) -> RuleCheck:
    return RuleCheck(rule=rule.id, source=rule.where(), reproducer=rule.reproducer,
                     state="not_testable", why=why)


def _verify_rule(rule: Rule, env: Environment, seed: int, timeout: float | None) -> RuleCheck:
    from .runner import device_kind

    if rule.reproducer is None:
        return _untestable(rule, "the rule names no reproducer")
    if not rule.enabled:
        return _untestable(rule, f"switched off (enabled = false) at {rule.where()}")
    rep, ref = load_reproducer(rule)
    traits = detect_traits(rep.task.kernel)
    applies = rule_state(rule, env, traits)
    lifted = applies.state == "inactive" and applies.why.startswith("lifted")
    if applies.state == "possible":
        return _untestable(rule, "facts unknown here: " + ", ".join(applies.unknown))
    if applies.state == "inactive" and not lifted:
        return _untestable(rule, applies.why)
    kind = device_kind()
    if kind not in rep.backends:
        return _untestable(rule, f"the bug shows only on: {', '.join(rep.backends)}; kernels "
                                 f"run under the {kind} here")
    space = rep.task.space
    binding = bind(space, traits)
    configs = list(rep.task.configs) if rep.task.configs is not None else list(space.configs())
    covered = [c for c in configs if match_rule(rule, c, space, traits=traits, binding=binding)]
    baseline = baseline_config(space, binding)
    if not covered or baseline in covered:
        what = "no config of its task" if not covered else f"its baseline {baseline.text()}"
        return _untestable(rule, f"reproducer {rule.reproducer} is unusable: the rule covers "
                                 f"{what}")
    check = RuleCheck(rule=rule.id, source=rule.where(), reproducer=rule.reproducer,
                      state="not_testable", assumed="fixed" if lifted else "present", why="",
                      baseline=baseline.text())
    try:
        base, trials = _run(rep, ref, baseline, covered, kind, seed, timeout,
                            "atomics" not in traits.traits)
    except (BaselineFailed, CheckFailed) as e:
        return _untestable(rule, f"the baseline {baseline.text()} failed, so nothing can be "
                                 f"judged: {str(e)[:300]}")
    except WorkerSetupError as e:
        return _untestable(rule, f"reproducer {rule.reproducer} could not start: {str(e)[:300]}")
    if base.status is not Outcome.OK:
        return _untestable(rule, f"the baseline {baseline.text()} fails too ({base.status}: "
                                 f"{base.reason.summary if base.reason else ''}), so the "
                                 "reproducer shows nothing about the rule")
    return _judged(check, rep, env, trials, applies.why if lifted else "")


def _run(rep: Reproducer, ref: TaskRef, baseline: Config, covered: list[Config], kind: str,
         seed: int, timeout: float | None, deterministic: bool) -> tuple[Trial, list[Trial]]:
    """The baseline's trial and each covered config's, from one isolated worker."""
    gpu = kind == "gpu"
    timeout = timeout or (60.0 if gpu else 300.0)
    pool = WorkerPool(ref, seed=seed, baseline_json=baseline.key(), compilers=0,
                      deterministic=deterministic, gpu=gpu, setup_timeout=timeout)
    launches = rep.launches or 1
    stress = StressCheck(min_launches=launches, max_launches=launches, seconds=0.0,
                         draws=min(launches, _DRAWS_FOR_STRESS))
    try:
        pool.start()
        evaluator = Evaluator(pool.run, draws=rep.draws, stress=stress, timeout=timeout)
        base = evaluator.quick(baseline, rep.draws)
        trials = []
        for config in covered:
            trial = evaluator.quick(config, rep.draws)
            if trial.status is Outcome.OK and rep.launches:
                trial = evaluator.stress(trial)
            trials.append(trial)
        return base, trials
    finally:
        pool.close()


def _outcome(trial: Trial) -> ConfigOutcome:
    evidence = dict(trial.reason.evidence) if trial.reason else {}
    keep = {k: evidence[k] for k in ("argument", "mismatched", "total", "max_abs_error",
                                     "max_rel_error", "launches", "wrong", "differing", "error")
            if k in evidence}
    if isinstance(keep.get("error"), str):
        keep["error"] = keep["error"].strip()[:1000]
    return ConfigOutcome(config=Config(values=trial.config).text(), status=trial.status,
                         checked=trial.checked(), summary=trial.reason.summary
                         if trial.reason else "", evidence=keep)


def _judged(check: RuleCheck, rep: Reproducer, env: Environment, trials: list[Trial],
            lifted_why: str) -> RuleCheck:
    """The check with the state the covered configs' trials show."""
    outcomes = [_outcome(t) for t in trials]
    failing = [t for t in trials if t.status is not Outcome.OK]
    if failing:
        statuses = sorted({t.status for t in failing})
        other = [s for s in statuses if s not in rep.shows]
        why = (f"{len(failing)} of {len(trials)} covered configs fail here "
               f"({', '.join(statuses)})")
        if other:
            why += f"; the reproducer expects {' or '.join(rep.shows)}"
        if lifted_why:
            why += f", but the rule is {lifted_why}"
        return check.model_copy(update={"state": "present", "why": why, "outcomes": outcomes})
    why = f"all {len(trials)} covered configs are right here"
    if rep.launches:  # an intermittent bug: absence in n launches bounds its rate, no more
        why += (f" in {rep.launches} poisoned launches each; a bug showing in fewer than "
                f"{3 / rep.launches:.2%} of launches would go unseen 95% of the time, so "
                "this proves no fix: the rule stays as it is")
        return check.model_copy(update={"state": "not_reproduced", "why": why,
                                        "outcomes": outcomes})
    until = None
    if check.assumed == "present" and env.triton:
        until = f'[rule.until]\ntriton = ">={env.triton}"'
        why += f"; the rule could be lifted from triton {env.triton}"
    return check.model_copy(update={"state": "fixed", "why": why, "outcomes": outcomes,
                                    "until": until})


_LABEL = {"present": "still present", "fixed": "fixed here", "not_reproduced": "not reproduced",
          "not_testable": "not testable here"}


def render_checks(checks: list[RuleCheck]) -> str:
    """The checks as a table for people, with each tested config's evidence below its rule."""
    if not checks:
        return "no rule names a reproducer"
    width = max(len(c.rule) for c in checks)
    lines = [f"{'rule':<{width}}  {'state':<17}  {'policy assumes':<14}  why"]
    for c in checks:
        assumed = "-" if c.assumed is None else c.assumed
        mark = "" if c.agrees else "  << differs"
        lines.append(f"{c.rule:<{width}}  {_LABEL[c.state]:<17}  {assumed:<14}  {c.why}{mark}")
        if c.baseline:
            lines.append(f"{'':<{width}}    reproducer {c.reproducer}, against baseline "
                         f"{c.baseline}")
        for o in c.outcomes:
            detail = o.summary or o.checked
            lines.append(f"{'':<{width}}    {o.config}: {o.status}: {detail}"[:400])
        if c.until:
            lines.append(f"{'':<{width}}    to lift it, add to rule {c.rule!r} at {c.source}:")
            lines += [f"{'':<{width}}      {line}" for line in c.until.splitlines()]
    differs = [c.rule for c in checks if not c.agrees]
    if differs:
        lines.append(f"\n{len(differs)} rule(s) differ from what the policy assumes: "
                     f"{', '.join(differs)} (exit {EXIT_DIFFERS})")
    return "\n".join(lines)
