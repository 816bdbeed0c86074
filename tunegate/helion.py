"""tunegate's policy and accuracy check inside Helion's autotuner, through its public settings.

`HelionGate(...).settings()` gives keyword arguments for `@helion.kernel(...)`: Helion's
`autotune_config_filter` drops every config the policy disables before Helion compiles it, and
Helion's `autotuner_fn` is wrapped so the gate knows the kernel and its arguments: an experimental
config is run and compared with the baseline (`reference`, else the kernel's default config)
before Helion may time it, and dropped if wrong (Helion skips `autotuner_fn` for an explicit
`configs=[...]`; there Helion's own accuracy check, kept on, does the comparing). Nothing here
raises inside Helion: a config tunegate cannot read is allowed, with a warning in the log
(logger `tunegate.helion`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .errors import TunegateError
from .policy import Environment, Policy, detect_environment
from .policy.traits import KernelTraits
from .space.helion import helion_config

__all__ = ["GateCounts", "HelionGate"]

log = logging.getLogger("tunegate.helion")


@dataclass
class GateCounts:
    """What the gate did with the configs Helion offered it."""

    seen: int = 0
    excluded: int = 0
    experimental: int = 0
    checked_right: int = 0
    checked_wrong: int = 0
    unreadable: int = 0
    rules: dict[str, int] = field(default_factory=dict)  # rule id -> configs it removed


class HelionGate:
    """A policy and an accuracy check for one Helion kernel's autotuning.

    `policy` and `env` default to the effective policy and this machine; `traits` are the
    kernel's (Helion kernels have no Triton source to read them from, so rules that need traits
    only apply when given); `reference` computes the right output from the kernel's arguments.
    """

    def __init__(self, policy: Policy | None = None, env: Environment | None = None, *,
                 traits: KernelTraits | None = None, reference: Callable[..., Any] | None = None,
                 tolerances: dict[str, tuple[float, float]] | None = None) -> None:
        self.policy = policy if policy is not None else Policy.load()
        self.env = env if env is not None else detect_environment(probe_device=True)
        self.traits, self.reference, self.tolerances = traits, reference, tolerances
        self.counts = GateCounts()
        self._kernel: Any = None
        self._args: Sequence[Any] = ()
        self._expected: Any = None
        self._moved: Any = None  # the baseline's output on moved inputs (see `_moved_baseline`)

    def settings(self, inner: Callable[..., Any] | None = None) -> dict[str, Any]:
        """`@helion.kernel(**gate.settings())`; `inner` is the autotuner_fn to wrap (Helion's).
        A reference is Helion's baseline too, so Helion's own check compares with it."""
        out = {"autotune_config_filter": self, "autotuner_fn": self.autotuner_fn(inner),
               "autotune_accuracy_check": True}
        if self.reference is not None:
            out["autotune_baseline_fn"] = self.reference
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> "HelionGate":
        """Itself: Helion deep-copies its settings (`Settings.to_dict`) once the autotuner has
        handed the gate the bound kernel, which cannot be copied; and a copy would count and
        check apart from the gate the caller holds."""
        return self

    def autotuner_fn(self, inner: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """Helion's `autotuner_fn`, which first lets the gate see the bound kernel and args."""
        def autotuner_fn(bound_kernel: Any, args: Sequence[Any], **kwargs: Any) -> Any:
            self._kernel, self._args, self._expected = bound_kernel, tuple(args), None
            self._moved = None
            self._check_default(bound_kernel)
            if inner is not None:
                return inner(bound_kernel, args, **kwargs)
            from helion.runtime.settings import default_autotuner_fn

            return default_autotuner_fn(bound_kernel, args, **kwargs)
        return autotuner_fn

    def __call__(self, config: Any) -> Any:
        """Helion's `autotune_config_filter`: the config, or None where tunegate rules it out."""
        self.counts.seen += 1
        try:
            verdict = self.verdict(config)
        except Exception as e:  # never raise inside Helion: unread means unchecked, not dropped
            self.counts.unreadable += 1
            log.warning("tunegate cannot read Helion config %r (%s: %s): allowed unchecked",
                        config, type(e).__name__, e)
            return config
        if verdict.status == "excluded":
            self.counts.excluded += 1
            ids = [m.rule for m in verdict.matched if m.action == "disable"]
            for rule in ids:
                self.counts.rules[rule] = self.counts.rules.get(rule, 0) + 1
            log.info("excluded before compiling %r by %s", config, ", ".join(ids))
            return None
        if verdict.status == "experimental":
            self.counts.experimental += 1
            return config if self._right(config, verdict.experimental_features) else None
        return config

    def verdict(self, config: Any) -> Any:
        """The policy's verdict on one `helion.Config` (or mapping of its fields)."""
        point, space = helion_config(dict(config))  # a helion.Config is a Mapping
        return self.policy.explain(point, space, self.env, self.traits)

    def _right(self, config: Any, features: list[str]) -> bool:
        """Whether an experimental config computes the baseline's output. Without the kernel
        (Helion gave none) it is kept for Helion's own check; one that cannot run is dropped."""
        if self._kernel is None:  # Helion skips autotuner_fn for an explicit configs=[...]
            log.info("experimental Helion config %r (%s) kept for Helion's own accuracy check "
                     "(autotune_accuracy_check) to compare with the baseline before timing it",
                     config, ", ".join(features))
            return True
        try:
            if self._expected is None:
                self._expected = self._baseline()
            got = self._run(config)
            wrong = _mismatches(got, self._expected, self.tolerances)
            if wrong and all(m.rtol > 0 and not m.unwritten and m.max_abs_error is not None
                             for m in wrong):  # finite float differences: within how far the
                if self._moved is None:  # baseline moves with its inputs? (check.sensitivity)
                    self._moved = self._moved_baseline()
                wrong = _mismatches(got, self._expected, self.tolerances, moved=self._moved)
        except Exception as e:  # unchecked means its timing must not count
            log.warning("experimental Helion config %r failed its accuracy check run (%s: %s): "
                        "dropped", config, type(e).__name__, e)
            self.counts.checked_wrong += 1
            return False
        if wrong:
            self.counts.checked_wrong += 1
            log.warning("experimental Helion config %r (%s) is wrong, dropped before timing: %s",
                        config, ", ".join(features), "; ".join(m.summary() for m in wrong))
            return False
        self.counts.checked_right += 1
        return True

    def _baseline(self, args: tuple[Any, ...] | None = None) -> Any:
        """The expected output and arguments: the reference's or the default config's, on
        copies of the call's arguments (or on `args`)."""
        args = _copies(self._args) if args is None else args
        if self.reference is not None:
            return (self.reference(*args), None)
        default = self._kernel.config_spec.default_config()
        if self.verdict(default).status == "excluded":  # disabled configs are never compiled
            raise _NoBaseline("the kernel's default config is excluded by the policy and no "
                              "reference was given: HelionGate(reference=...)")
        return self._run(default, args)

    def _moved_baseline(self) -> tuple[Any, float, float]:
        """The baseline on copies of the arguments whose floats moved by a `perturbation`
        (`check.perturb`), with the factor that scales its move and the perturbation."""
        import torch

        from .autotune.check import perturb, perturbation

        args = _copies(self._args)
        nominal = perturbation(args)
        scale = perturb([a for a in args if isinstance(a, torch.Tensor)], nominal, seed=0)
        return self._baseline(args), scale, nominal

    def _run(self, config: Any, args: tuple[Any, ...] | None = None
             ) -> tuple[Any, tuple[Any, ...]]:
        """The output and the arguments after one run of `config` on copies of the args (or
        on `args`)."""
        args = _copies(self._args) if args is None else args
        out = self._kernel.compile_config(config)(*args)
        return (out, args)

    def _check_default(self, bound_kernel: Any) -> None:
        if self.reference is not None:
            return
        try:
            verdict = self.verdict(bound_kernel.config_spec.default_config())
        except Exception as e:
            log.warning("tunegate cannot read the kernel's default Helion config (%s)", e)
            return
        if verdict.status != "allowed":
            log.warning("the kernel's default Helion config, the baseline of every accuracy "
                        "check, is %s by %s: give HelionGate(reference=...) a reference",
                        verdict.status, ", ".join(m.rule for m in verdict.matched))


class _NoBaseline(TunegateError):
    """Nothing to check an experimental config against."""


def _copies(args: Sequence[Any]) -> tuple[Any, ...]:
    import torch

    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _tensors(value: Any, name: str) -> list[tuple[str, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (list, tuple)):
        return [t for i, v in enumerate(value) for t in _tensors(v, f"{name}[{i}]")]
    return []


def _mismatches(got: Any, expected: Any, tolerances: Any,
                moved: tuple[Any, float, float] | None = None) -> list[Any]:
    """Every output (and argument, which the kernel may write) that differs from the
    baseline's; with `moved` (`_moved_baseline`), allowing the baseline's `check.sensitivity`."""
    from .autotune.check import compare, sensitivity, working_dtype

    def pairs_of(a: Any, b: Any) -> list[tuple[tuple[str, Any], tuple[str, Any]]]:
        (a_out, a_args), (b_out, b_args) = a, b
        pairs = list(zip(_tensors(a_out, "output"), _tensors(b_out, "output")))
        if b_args is not None and a_args is not None:
            pairs += zip(_tensors(a_args, "argument"), _tensors(b_args, "argument"))
        return pairs

    pairs = pairs_of(got, expected)
    working = working_dtype(e for _, (_, e) in pairs)
    slacks: dict[str, Any] = {}
    if moved is not None:
        state, scale, nominal = moved
        slacks = {name: sensitivity(e, m).mul_(scale) for (name, m), (_, e)
                  in pairs_of(state, expected) if e.dtype.is_floating_point}
    found = [compare(name, g, e, tolerances, working=working, slack=slacks.get(name),
                     perturbed=moved[2] if moved else 0.0)
             for (name, g), (_, e) in pairs]
    return [m for m in found if m is not None]
