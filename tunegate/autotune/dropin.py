"""The drop-in `triton.autotune`: Triton's signature and call convention, tunegate's checks.

`Autotuner` subclasses the installed Triton's, so validation, pruning, hooks, `.cache`,
`.configs`, `.fn`, `.best_config` and `kernel[grid](...)` keep Triton's meaning. What changes is
how a key is tuned: configs the policy disables are dropped (one log line each), the rest are
measured in isolated worker processes on copies of the call's own tensors (and, for further
draws, slightly perturbed copies: see `CallerData`), experimental ones are accuracy-checked,
and so is the winner. The caller's own tensors are only read, never written, while tuning, so
`reset_to_zero`/`restore_value` need no clean-up afterwards.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import inspect
import logging
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import triton
from triton.runtime.autotuner import Autotuner as TritonAutotuner
from triton.runtime.autotuner import Heuristics

from ..errors import TunegateError
from ..policy import Environment, Policy, detect_environment
from ..policy.binding import bind
from ..space.space import Config
from .inputs import CallerData
from .outputs import stored_arguments
from .store import Store, open_store
from .task import Args, Task, space_from_triton_configs
from .tuner import Budget, TuneError, TuneResult, Tuner, baseline_config
from .worker import TaskRef

__all__ = ["Autotuner", "CallSite", "DropInError", "autotune", "chain", "innermost"]

log = logging.getLogger("tunegate")

# Launch options a call site may pass next to the kernel's own arguments.
CALL_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override",
                                 "launch_cooperative_grid", "launch_cluster", "launch_pdl"})
_TUNER_OPTIONS = ("policy", "env", "store", "strategy", "budget", "seed", "draws", "timeout",
                  "progress")
_PRUNE_KEYS = ("perf_model", "top_k", "early_config_prune")


class DropInError(ValueError, TunegateError):
    """An argument of the drop-in decorator is invalid; the message names it and the value."""


def chain(obj: Any) -> list[Any]:
    """`obj`, `obj.fn`, `obj.fn.fn`, … down to the `@triton.jit` object (not the Python def)."""
    out = [obj]
    while hasattr(out[-1], "fn") and not inspect.isfunction(out[-1].fn):
        out.append(out[-1].fn)
    return out


def innermost(obj: Any) -> Any:
    """The `@triton.jit` object under any Autotuner/Heuristics wrappers."""
    return chain(obj)[-1]


def _validate(fn: Any, arg_names: Sequence[str], configs: Any, key: Any, reset_to_zero: Any,
              restore_value: Any, prune_configs_by: Any, hooks: dict[str, Any], warmup: Any,
              rep: Any, use_cuda_graph: Any, cache_results: Any) -> None:
    """Check every option when decorating, so a mistake is not found at the first launch."""
    if not hasattr(fn, "arg_names") or not hasattr(fn, "run"):
        raise DropInError(f"autotune decorates a @triton.jit function (or a @triton.heuristics "
                          f"of one), got {fn!r}")
    if configs is not None:
        bad = [c for c in configs if not isinstance(c, triton.Config)]
        if isinstance(configs, (str, bytes)) or bad:
            raise DropInError("configs must be a list of triton.Config, got "
                              f"{bad[:1] or configs!r}")
    for param, names in (("key", key), ("reset_to_zero", reset_to_zero or []),
                         ("restore_value", restore_value or [])):
        if names is None or isinstance(names, str) or not all(isinstance(k, str) for k in names):
            raise DropInError(f"{param} must be a list of argument names, got {names!r}")
        unknown = [n for n in names if n not in arg_names]
        if unknown:
            raise DropInError(f"{param} contains names that are not kernel arguments: "
                              f"{', '.join(unknown)}. Valid argument names are: "
                              f"{', '.join(arg_names)}.")
    if prune_configs_by is not None:
        if not isinstance(prune_configs_by, Mapping):
            raise DropInError(f"prune_configs_by must be a dict, got {prune_configs_by!r}")
        unknown = sorted(set(prune_configs_by) - set(_PRUNE_KEYS))
        if unknown:
            raise DropInError(f"prune_configs_by has unknown keys {unknown}; it takes "
                              f"{', '.join(_PRUNE_KEYS)}")
        for name in ("perf_model", "early_config_prune"):
            if prune_configs_by.get(name) is not None and not callable(prune_configs_by[name]):
                raise DropInError(f"prune_configs_by[{name!r}] must be callable")
        top_k = prune_configs_by.get("top_k", 1.0)
        if isinstance(top_k, bool) or not (isinstance(top_k, int) and top_k >= 1 or
                                           isinstance(top_k, float) and 0 < top_k <= 1.0):
            raise DropInError(f"prune_configs_by['top_k'] must be an int >= 1 or a float in "
                              f"(0, 1], got {top_k!r}")
    for name, value in hooks.items():
        if value is not None and not callable(value):
            raise DropInError(f"{name} must be callable, got {value!r}")
    for name, value in (("warmup", warmup), ("rep", rep)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value <= 0):
            raise DropInError(f"{name} must be a positive number of milliseconds, got {value!r}")
    for name, value in (("use_cuda_graph", use_cuda_graph), ("cache_results", cache_results)):
        if not isinstance(value, bool):
            raise DropInError(f"{name} must be True or False, got {value!r}")


@dataclass(frozen=True)
class CallSite:
    """What a worker needs, besides the module it re-imports, to launch one call's configs.

    The grid (often a lambda over local sizes) is evaluated here, per config, because a worker
    cannot import a closure. `entries` are indices into the autotuner's `configs`, or
    (picklable) configs that pruning made.
    """

    depth: int
    problem: str
    entries: tuple[Any, ...]
    grids: dict[str, tuple[int, ...]]
    launch: dict[str, Any]
    outputs: tuple[str, ...]
    features: dict[str, str] = field(default_factory=dict)
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    reference: Callable[..., Any] | None = None

    def task(self, obj: Any) -> Task:
        """The task of the autotuner `depth` steps down `obj` (re-imported by the worker)."""
        tuner = chain(obj)[self.depth]
        configs = [tuner.configs[e] if isinstance(e, int) else e for e in self.entries]
        return _task(tuner, self, configs)


def _problem(tuner: TritonAutotuner, key: tuple[Any, ...], configs: Sequence[Any]) -> str:
    """Triton's tuning key as text, plus a digest of the candidate list it was tuned over."""
    digest = hashlib.sha256("|".join(str(c) for c in configs).encode()).hexdigest()[:10]
    names = [k for k in tuner.keys]
    parts = [f"{n}={v}" for n, v in zip(names, key)] + [str(v) for v in key[len(names):]]
    return ",".join(parts) + f",configs={digest}"


class _Configs:
    """The triton.Config behind each point of the space made from a config list."""

    def __init__(self, configs: Sequence[Any], features: Mapping[str, str]) -> None:
        self.configs = list(configs)
        self.space, self.points = space_from_triton_configs(configs, features)
        self.by_key: dict[str, Any] = {}
        for point, config in zip(self.points, self.configs):
            self.by_key.setdefault(point.key(), config)
        hooks = {c.pre_hook for c in self.configs}
        self.shared_hook = next(iter(hooks)) if len(hooks) == 1 else None

    def triton_config(self, point: Config) -> Any:
        """The listed config at `point`, else one built from its values (the baseline)."""
        if point.key() in self.by_key:
            return self.by_key[point.key()]
        values = {k: v for k, v in point.values.items() if v is not None}
        launch = {k: values.pop(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                  if k in values}
        return triton.Config(values, **launch, pre_hook=self.shared_hook)


def _task(tuner: TritonAutotuner, call: CallSite, configs: Sequence[Any]) -> Task:
    listed = _Configs(configs, call.features)
    reset = tuple(getattr(tuner, "reset_to_zero", ()))

    def launch(args: Args, point: Config) -> None:
        config = listed.triton_config(point)
        current = {**call.launch, **config.all_kwargs()}
        full = {**args, **current}
        if config.pre_hook is not None:
            config.pre_hook(full)
        if getattr(tuner, "user_defined_pre_hook", False):
            tuner.pre_hook(full)
        for name in reset:  # Triton's default pre_hook; a user pre_hook replaces it
            if not getattr(tuner, "user_defined_pre_hook", False) and args[name] is not None:
                args[name].zero_()
        if point.key() not in call.grids:
            raise TuneError(f"no launch grid was worked out for {point.text()}")
        error: Exception | None = None
        try:
            tuner.fn.run(grid=call.grids[point.key()], warmup=False, **args, **current)
        except Exception as e:
            error = e
            raise
        finally:
            if getattr(tuner, "user_defined_post_hook", False):
                tuner.post_hook(full, exception=error)

    return Task(name=innermost(tuner).__name__, kernel=innermost(tuner), space=listed.space,
                configs=listed.points, grid=(1,), make_inputs=_no_inputs, outputs=call.outputs,
                reference=call.reference, launch=launch, tolerances=call.tolerances,
                key=lambda _args: call.problem, restore_value=tuple(tuner.restore_value),
                reset_to_zero=reset, do_bench=getattr(tuner, "_do_bench", None))


def _no_inputs(seed: int, device: str = "cpu") -> Args:
    raise TuneError("a drop-in kernel draws its inputs from the call it is tuned on")


def _locate(tuner: TritonAutotuner) -> tuple[TaskRef | None, int, str]:
    """Where a worker re-imports `tuner`: (reference, depth in its `.fn` chain, why not)."""
    base = innermost(tuner).fn
    module = sys.modules.get(base.__module__)
    if module is None:
        return None, 0, f"its module {base.__module__!r} is not imported"
    # A kernel made by `wrap()` is found through the Triton autotuner it was made from.
    targets = [t for t in (tuner, getattr(tuner, "origin", None)) if t is not None]
    for name, value in list(vars(module).items()):
        links = chain(value) if hasattr(value, "fn") else []
        depth = next((i for i, link in enumerate(links) if any(link is t for t in targets)), None)
        if depth is not None:
            file = getattr(module, "__file__", None) or ""
            spec = getattr(module, "__spec__", None)
            importable = spec is not None and spec.name and not spec.name.startswith(
                "tunegate_user_") and spec.name != "__main__"
            if importable:
                return TaskRef(file, name, module=spec.name), depth, ""
            if file:
                return TaskRef(file, name), depth, ""
            return None, 0, f"module {base.__module__!r} has no file to import"
    return None, 0, (f"{base.__name__} is not bound to a name at module level of "
                     f"{base.__module__!r}")


_SCRATCH: dict[str, Store] = {}


def _scratch_store() -> Store:
    """A store for this process only: Triton's autotuner keeps results in memory by default."""
    if "store" not in _SCRATCH:
        handle, path = tempfile.mkstemp(prefix="tunegate-dropin-", suffix=".sqlite")
        os.close(handle)
        os.unlink(path)
        atexit.register(lambda: [os.unlink(p) for p in (path, path + "-wal", path + "-shm")
                                 if os.path.exists(p)])
        _SCRATCH["store"] = open_store(path)
    return _SCRATCH["store"]


class Autotuner(TritonAutotuner):
    """Triton's `Autotuner`, tuning each new key through tunegate's gate, checks and workers.

    Extra keyword-only options: `outputs` (inferred from the source when not given),
    `reference`, `features` (config parameter -> tunegate feature), `tolerances`, `grid`
    (allows calling `kernel(*args)` without `[grid]`) and the `Tuner`'s own (`policy`, `env`,
    `store`, `strategy`, `budget`, `seed`, `draws`, `timeout`, `progress`).
    """

    def __init__(self, fn: Any, arg_names: Sequence[str], configs: Sequence[Any] | None,
                 key: Sequence[str], reset_to_zero: Sequence[str] | None = None,
                 restore_value: Sequence[str] | None = None, pre_hook: Any = None,
                 post_hook: Any = None, prune_configs_by: dict[str, Any] | None = None,
                 warmup: float | None = None, rep: float | None = None,
                 use_cuda_graph: bool = False, do_bench: Any = None, cache_results: bool = False,
                 *, outputs: Sequence[str] | None = None,
                 reference: Callable[..., Any] | None = None,
                 features: Mapping[str, str] | None = None,
                 tolerances: Mapping[str, tuple[float, float]] | None = None,
                 grid: Any = None, **options: Any) -> None:
        _validate(fn, arg_names or [], configs, key, reset_to_zero, restore_value,
                  prune_configs_by, {"pre_hook": pre_hook, "post_hook": post_hook,
                                     "do_bench": do_bench, "reference": reference},
                  warmup, rep, use_cuda_graph, cache_results)
        unknown = sorted(set(options) - set(_TUNER_OPTIONS))
        if unknown:
            raise DropInError(f"autotune got unknown options {unknown}")
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results)
        self.outputs = tuple(outputs) if outputs is not None else None
        for name in self.outputs or ():
            if name not in self.arg_names:
                raise DropInError(f"outputs names {name!r}, which is not an argument of "
                                  f"{self.base_fn.__name__} ({', '.join(self.arg_names)})")
        self.reference, self.features = reference, dict(features or {})
        self.tolerances = dict(tolerances or {})
        self.grid, self.options = grid, options
        self.persist = cache_results or "store" in options or bool(
            os.environ.get("TUNEGATE_STORE")) or bool(triton.knobs.autotuning.cache)
        self.last_result: TuneResult | None = None
        self.origin: Any = None  # the Triton autotuner this one was made from by `wrap()`
        self._policy: tuple[Policy, Environment] | None = None

    # -- Triton's call convention ------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`kernel(*args)` when the decorator was given `grid=`; else use `kernel[grid](...)`."""
        if self.grid is None:
            raise DropInError(f"launch {self.base_fn.__name__} as kernel[grid](...), or give "
                              "the decorator grid=")
        return self.run(*args, grid=self.grid, warmup=False, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        try:
            conflicts = sorted(set(kwargs) & {k for c in self.configs for k in c.kwargs})
            if conflicts:
                raise DropInError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make "
                                  "sure that you don't re-define auto-tuned symbols.")
            key = self._key(kwargs)
            if key not in self.cache:
                self.cache[key] = self._choose(args, kwargs, key)
            config = self.cache[key]
            self.best_config = config
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            # As Triton's benchmark does: the config's launch options win over the call's.
            return self.fn.run(*args, **{**kwargs, **config.all_kwargs()})
        finally:
            self.nargs = None

    def _key(self, kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Triton's key: the `key` arguments' values, then every tensor argument's dtype."""
        named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
        key = [named[k] for k in self.keys if k in named]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    # -- tuning ------------------------------------------------------------------------------
    def _gate(self) -> tuple[Policy, Environment]:
        if self._policy is None:
            policy = self.options.get("policy") or Policy.load()
            env = self.options.get("env") or detect_environment(probe_device=True)
            self._policy = (policy, env)
        return self._policy

    def _choose(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: tuple[Any, ...]) -> Any:
        pruned = self.prune_configs(kwargs) if len(self.configs) > 1 else list(self.configs)
        policy, env = self._gate()
        listed = _Configs(pruned, self.features)
        traits = _called(self, listed, kwargs)
        region = policy.gate(listed.space, env, traits)
        allowed = []
        for point, config in zip(listed.points, pruned):
            verdict = region.verdict(point)
            if verdict.excluded:
                why = "; ".join(r.line() for r in verdict.reasons())
                log.warning("%s: dropped config %s: %s", self.base_fn.__name__, config, why)
            else:
                allowed.append(config)
        if not allowed:
            raise TuneError(f"every config of {self.base_fn.__name__} is excluded by the policy "
                            "here (see the log lines above, or `tunegate policy explain`)")
        if len(pruned) == 1:
            return allowed[0]  # as Triton: one candidate is used without measuring it
        return self._tune(args, kwargs, key, pruned, listed, traits)

    def _tune(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: tuple[Any, ...],
              pruned: list[Any], listed: _Configs, traits: Any) -> Any:
        ref, depth, why = _locate(self)
        if ref is None:
            raise TuneError(f"cannot tune {self.base_fn.__name__} in worker processes: {why}. "
                            "Define the kernel at module level of an importable module or file")
        call_kwargs = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        launch = {k: v for k, v in call_kwargs.items() if k in CALL_LAUNCH_OPTIONS}
        bound = {**self.nargs, **{k: v for k, v in call_kwargs.items() if k not in launch}}
        entries = tuple(next((i for i, c in enumerate(self.configs) if c is p), p)
                        for p in pruned)
        candidates = [*listed.points, baseline_config(listed.space, bind(listed.space, _traits(self)))]
        grids = {p.key(): self._grid(kwargs["grid"], bound, launch, listed.triton_config(p))
                 for p in candidates}
        outputs = self.outputs if self.outputs is not None else tuple(
            n for n in stored_arguments(self) if hasattr(bound.get(n), "dtype"))
        call = CallSite(depth=depth, problem=_problem(self, key, pruned), entries=entries,
                        grids=grids, launch=launch, outputs=outputs, features=self.features,
                        tolerances=self.tolerances, reference=self.reference)
        # Draw 0 of the tuner's seed (the Tuner's default is 0) is the call's own data.
        inputs = CallerData(bound, seed=self.options.get("seed", 0))
        ref = TaskRef(ref.file, ref.name, inputs, module=ref.module, call=call)
        policy, env = self._gate()
        options = {k: v for k, v in self.options.items() if k not in ("policy", "env")}
        budget = options.pop("budget", len(pruned))
        options.setdefault("store", None if self.persist else _scratch_store())
        if isinstance(options["store"], (str, os.PathLike)) or options["store"] is None:
            options["store"] = open_store(options["store"])
        tuner = Tuner(_task(self, call, pruned), ref, policy=policy, env=env, traits=traits,
                      budget=budget if isinstance(budget, Budget) else Budget(configs=budget),
                      **options)
        try:
            result = tuner.run()
        finally:  # say why each config lost, also when none is left
            for trial in getattr(tuner, "trials", []):
                if trial.status != "ok" and trial.reason is not None:
                    log.warning("%s: rejected config %s: %s", self.base_fn.__name__,
                                Config(values=trial.config).text(), trial.reason.line())
        self.last_result = result
        assert result.best is not None
        return listed.triton_config(Config(values=result.best))

    def _grid(self, grid: Any, bound: Args, launch: dict[str, Any],
              config: Any) -> tuple[int, ...]:
        """The launch grid for one config, with inner heuristics applied as Triton would."""
        if not callable(grid):
            return tuple(grid)
        meta = {**bound, **launch, **config.all_kwargs()}
        try:
            for link in chain(self.fn):
                if isinstance(link, Heuristics):
                    for name, heuristic in link.values.items():
                        meta[name] = heuristic(meta)
            return tuple(int(g) for g in grid(meta))
        except Exception as e:  # the user's grid or heuristic: name the config it failed on
            raise TuneError(f"the launch grid of {self.base_fn.__name__} failed for config "
                            f"{config}: {type(e).__name__}: {e}") from e


def _traits(tuner: Autotuner) -> Any:
    from ..policy import detect_traits

    return detect_traits(innermost(tuner))


def _called(tuner: Autotuner, listed: _Configs, kwargs: Mapping[str, Any]) -> Any:
    """The kernel's traits with this call's problem facts (dtypes, shapes, descriptor blocks),
    which rule predicates read; a host descriptor's block is what each config's pre_hook sets,
    worked out on copies of the descriptors."""
    nargs = {**(tuner.nargs or {}), **{k: v for k, v in kwargs.items() if k in tuner.arg_names}}
    descs = [n for n, v in nargs.items() if hasattr(v, "block_shape") and hasattr(v, "base")]

    def blocks(values: Mapping[str, Any]) -> dict[str, Any]:
        config = listed.triton_config(Config(values=dict(values)))
        if config.pre_hook is None:
            return {}
        copies = {**nargs, **{n: copy.copy(nargs[n]) for n in descs}, **config.all_kwargs()}
        try:
            config.pre_hook(copies)
        except Exception:  # noqa: BLE001 - the user's hook: its blocks are then unknown
            return dict.fromkeys(descs)
        return {n: getattr(copies[n], "block_shape", None) for n in descs}

    return _traits(tuner).called_with(nargs, blocks if descs else None)


def autotune(configs: Sequence[Any], key: Sequence[str], prune_configs_by: dict[str, Any] | None
             = None, reset_to_zero: Sequence[str] | None = None,
             restore_value: Sequence[str] | None = None, pre_hook: Any = None,
             post_hook: Any = None, warmup: float | None = None, rep: float | None = None,
             use_cuda_graph: bool = False, do_bench: Any = None, cache_results: bool = False,
             **tunegate_options: Any) -> Callable[[Any], Autotuner]:
    """`triton.autotune`, with the same arguments and meaning, tuning through tunegate.

    `tunegate_options` are `Autotuner`'s keyword-only extras (outputs, reference, policy, …).
    """
    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, getattr(fn, "arg_names", None), configs, key, reset_to_zero,
                         restore_value, pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results, **tunegate_options)

    return decorator
