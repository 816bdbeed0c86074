"""The drop-in `triton.autotune`: Triton's signature and call convention, tunegate's checks.

`Autotuner` subclasses the installed Triton's, so validation, pruning, hooks, `.cache`,
`.configs`, `.fn`, `.best_config` and `kernel[grid](...)` keep Triton's meaning. What changes is
how a key is tuned: configs the policy disables are dropped, the rest are measured in
isolated worker processes on copies of the call's own tensors (and, for further draws, slightly
perturbed copies: see `CallerData`), experimental ones are accuracy-checked, and so is the
winner. The caller's own tensors are only read, never written, while tuning, so
`restore_value` needs no clean-up afterwards; `reset_to_zero` tensors are zeroed before the
tuning call's own launch, as Triton does after its benchmark. Each tuning is reported in one log
line (see `dropin_report`); why each dropped or rejected config lost is logged at DEBUG.
"""

from __future__ import annotations

import atexit
import copy
import inspect
import io
import logging
import os
import pickle
import sys
import tempfile
import threading
from typing import Any, Callable, Mapping, Sequence

import triton
from triton.runtime.autotuner import Autotuner as TritonAutotuner
from triton.runtime.autotuner import Heuristics

from ..kernelfile import chain, jit_function, unguarded_line
from ..outcome import Outcome
from ..policy import Environment, Policy, detect_environment
from ..policy.binding import bind
from ..space.space import Config
from .callsite import CallSite, Configs, key_text, launched_source, make_task, problem
from .dropin_options import TUNER_OPTIONS, DropInError, validate
from .dropin_report import record, tell_triton
from .inputs import CallerData
from .nested import Nested, flatten, leaves_of
from .outputs import stored_arguments
from .refs import locate
from .results import BaselinesFailed
from .store import Store, open_store
from .tuner import Budget, TuneError, TuneInterrupted, TuneResult, Tuner, baseline_config
from .warm import preload, warm_up
from .worker import TaskRef

__all__ = ["Autotuner", "DropInError", "autotune"]

log = logging.getLogger("tunegate")

# Launch options a call site may pass next to the kernel's own arguments.
CALL_LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "ir_override",
                                 "launch_cooperative_grid", "launch_cluster", "launch_pdl"})


# Said after a failure that a reference would settle, in the drop-in's terms: a kernel from a
# library cannot be edited, so the reference (or a policy rule) is given from outside it.
_GIVE_A_REFERENCE = (
    "Give {name} a reference: `reference=` of the autotune decorator, or, for a kernel you "
    "cannot edit (one from a library), `tunegate.wrap(lib.{name}, reference=fn)` before the "
    "program uses it; or exclude the wrong configs with a rule in your policies.toml "
    "(`tunegate policy explain` shows a config's fields)")

_SCRATCH: dict[str, Store] = {}


class _MainReferences(pickle.Pickler):
    """A pickler that notes the functions and classes it saves by a name in `__main__`: they
    pickle here, but a worker, which never runs the program's script, cannot load them."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO())
        self.found: list[str] = []

    def reducer_override(self, obj: Any) -> Any:
        if (inspect.isfunction(obj) or isinstance(obj, type)) and obj.__module__ == "__main__":
            self.found.append(obj.__qualname__)
        return NotImplemented


def _unpicklable(call: CallSite, inputs: CallerData) -> str:
    """Why a worker cannot be sent this call (a lambda reference, an argument that does not
    pickle, a reference function defined in the script run as `__main__`), or "" if it can.
    The tensors' host copies always pickle and are not tried."""
    for what, value in (("the call's options", call), ("its non-tensor arguments",
                                                      inputs.template)):
        pickler = _MainReferences()
        try:
            pickler.dump(value)
        except Exception as e:  # PicklingError, TypeError, AttributeError: all say the same
            return f"{what} cannot be sent to a worker process: {type(e).__name__}: {e}"
        if pickler.found:
            return (f"{what} name {', '.join(sorted(set(pickler.found)))} of the script run as "
                    "__main__, which worker processes do not run")
    return ""


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
    `scratch` (arguments whose contents after a launch are not compared: a workspace),
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
                 *, outputs: Sequence[str] | None = None, scratch: Sequence[str] = (),
                 reference: Callable[..., Any] | None = None,
                 features: Mapping[str, str] | None = None,
                 tolerances: Mapping[str, tuple[float, float]] | None = None,
                 grid: Any = None, **options: Any) -> None:
        validate(fn, arg_names or [], configs, key, reset_to_zero, restore_value,
                  prune_configs_by, {"pre_hook": pre_hook, "post_hook": post_hook,
                                     "do_bench": do_bench, "reference": reference},
                  warmup, rep, use_cuda_graph, cache_results)
        unknown = sorted(set(options) - set(TUNER_OPTIONS))
        if unknown:
            raise DropInError(f"autotune got unknown options {unknown}")
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook,
                         prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench,
                         cache_results=cache_results)
        self.outputs = tuple(outputs) if outputs is not None else None
        self.scratch = tuple(scratch)
        for option, names in (("outputs", self.outputs or ()), ("scratch", self.scratch)):
            for name in names:
                if name not in self.arg_names:
                    raise DropInError(f"{option} names {name!r}, which is not an argument of "
                                      f"{self.base_fn.__name__} ({', '.join(self.arg_names)})")
        self.reference, self.features = reference, dict(features or {})
        self.tolerances = dict(tolerances or {})
        self.grid, self.options = grid, options
        self._calls = threading.RLock()  # `nargs` is the call's: one call at a time
        self.persist = cache_results or "store" in options or bool(
            os.environ.get("TUNEGATE_STORE")) or bool(triton.knobs.autotuning.cache)
        self.last_result: TuneResult | None = None
        self.origin: Any = None  # the Triton autotuner this one was made from by `wrap()`
        self.defined_in = _defining_module()  # where a worker may find it, besides fn's module
        self._policy: tuple[Policy, Environment] | None = None
        warm_up(gpu_only=True)  # a program that defines an autotuned kernel will tune it
        preload(self.base_fn.__module__, self.defined_in)  # what its workers will import

    @property
    def bench_time(self) -> float | None:
        """Triton's: the seconds the last tuning took (a property, not state: a task's
        fingerprint reads the autotuner's simple attributes as its configuration)."""
        return None if self.last_result is None else self.last_result.wall_seconds

    # -- Triton's call convention ------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`kernel(*args)` when the decorator was given `grid=`; else use `kernel[grid](...)`."""
        if self.grid is None:
            raise DropInError(f"launch {self.base_fn.__name__} as kernel[grid](...), or give "
                              "the decorator grid=")
        return self.run(*args, grid=self.grid, warmup=False, **kwargs)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Triton's `run`, one thread at a time: a tuning reads the call's arguments from
        `nargs`, which a second thread's call would replace while the first is tuned."""
        with self._calls:
            return self._run(*args, **kwargs)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        try:
            key = self._key(kwargs)
            if key not in self.cache:
                self.cache[key] = self._choose(args, kwargs, key)
            config = self.cache[key]
            self.best_config = config
            if config.pre_hook is not None:
                config.pre_hook({**self.nargs, **kwargs, **config.all_kwargs()})
            # A launch option passed at the call gives way to the config's (Triton raises a
            # TypeError); a meta-parameter both passed and tuned is Triton's TypeError here
            tuned = config.all_kwargs()
            call = {k: v for k, v in kwargs.items() if k not in CALL_LAUNCH_OPTIONS or
                    k not in tuned}
            return self.fn.run(*args, **call, **tuned)
        finally:
            self.nargs = None

    @property
    def _defaults(self) -> dict[str, Any]:
        """The jit function's parameters with a default value in its signature."""
        try:
            parameters = inspect.signature(jit_function(self).fn).parameters
        except (TypeError, ValueError):
            return {}
        return {n: p.default for n, p in parameters.items() if p.default is not p.empty}

    def _reset_after_tuning(self, nargs: dict[str, Any]) -> None:
        """What Triton does after its benchmark, before the call's own launch: the pre_hook with
        `reset_only=True`, which zeroes the call's `reset_to_zero` tensors (a program that
        passes `torch.empty` there is right on its tuning call). A hook without `reset_only`
        (an older Triton's) is left alone, and the tensors zeroed here."""
        try:
            takes = "reset_only" in inspect.signature(self.pre_hook).parameters
        except (TypeError, ValueError):
            takes = False
        if takes:
            self.pre_hook(nargs, reset_only=True)
        elif not getattr(self, "user_defined_pre_hook", False):
            for name in self.reset_to_zero:
                if nargs.get(name) is not None:
                    nargs[name].zero_()

    def _key(self, kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """Triton's key: the `key` arguments' values, then every tensor argument's dtype."""
        named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
        key = [named[k] for k in self._key_names(kwargs)]
        key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
        return tuple(key)

    def _key_names(self, kwargs: dict[str, Any]) -> list[str]:
        """The `key` arguments this call passes (one left at its default is not in the key)."""
        given = {**self.nargs, **kwargs}
        return [k for k in self.keys if k in given and k in self.arg_names]

    # -- tuning ------------------------------------------------------------------------------
    def _gate(self) -> tuple[Policy, Environment]:
        if self._policy is None:
            policy = self.options.get("policy") or Policy.load()
            env = self.options.get("env") or detect_environment(probe_device=True)
            self._policy = (policy, env)
        return self._policy

    def _choose(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: tuple[Any, ...]) -> Any:
        pruned = self.prune_configs(kwargs) if len(self.configs) > 1 else list(self.configs)
        conflicts = sorted(set(kwargs) & {k for c in pruned for k in c.kwargs})
        if conflicts and len(pruned) > 1:  # Triton's own error, raised where its benchmark does
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure "
                             "that you don't re-define auto-tuned symbols.")
        policy, env = self._gate()
        listed = Configs(pruned, self.features)
        traits = _called(self, listed, kwargs)
        region = policy.gate(listed.space, env, traits)
        allowed, excluded = [], []
        for point, config in zip(listed.points, pruned):
            verdict = region.verdict(point)
            if verdict.excluded:
                reasons = verdict.reasons()
                excluded.append(next((r.rule for r in reasons if r.rule), "policy"))
                log.debug("%s: dropped config %s: %s", self.base_fn.__name__, config,
                          "; ".join(r.line() for r in reasons))
            else:
                allowed.append(config)
        name, shown = self.base_fn.__name__, key_text(self._key_names(kwargs), key)
        if not allowed:
            error = (f"every config of {name} is excluded by the policy here (rules: "
                     f"{', '.join(sorted(set(excluded)))}). `tunegate policy explain CONFIG "
                     f"--kernel FILE:{name}` says why; a rule can be switched off for this "
                     "project in a higher policy layer (policies.toml, $TUNEGATE_POLICY)")
            record(name, shown, len(pruned), excluded, error=error)
            raise TuneError(error)
        if len(pruned) == 1:  # as Triton: one candidate is used without measuring it
            if len(self.configs) > 1:
                tell_triton(self, key, allowed[0], listed, None)
            return allowed[0]
        try:
            result = self._tune(args, kwargs, key, pruned, listed, traits, allowed)
        except TuneInterrupted as e:  # stored, and reported; then the program stops
            record(name, shown, len(pruned), excluded, e.result, error="interrupted (Ctrl-C)")
            raise
        except TuneError as e:
            record(name, shown, len(pruned), excluded, e.result, error=str(e).split("\n")[0])
            if isinstance(e, BaselinesFailed) and e.raised and self.reference is None:
                self._launch_each(args, kwargs, allowed)  # the program's own error, as Triton's
            if self.reference is None and "reference" in str(e):  # said in the drop-in's terms
                said = str(e).split("; give the task a reference")[0]
                raise TuneError(f"{said}. {_GIVE_A_REFERENCE.format(name=name)}", e.result) \
                    from None
            raise
        winner = Config(values={k: result.best[k] for k in listed.space.parameters  # its
                                if result.best.get(k) is not None})  # order, reused or not
        record(name, shown, len(pruned), excluded, result, winner=winner.text())
        chosen = listed.triton_config(result.best)
        tell_triton(self, key, chosen, listed, result)
        self._reset_after_tuning({**self.nargs, **kwargs, **chosen.all_kwargs()})
        return chosen

    def _tune(self, args: tuple[Any, ...], kwargs: dict[str, Any], key: tuple[Any, ...],
              pruned: list[Any], listed: Configs, traits: Any, allowed: list[Any],
              here: str = "") -> TuneResult:
        """Tune this call in isolated workers, or here where they cannot run it (`here` says
        why); here too where every baseline raised in the workers while each allowed config
        launches here without error: the program's hooks or kernel read state that only this
        process set up (a dict filled under `if __name__ == "__main__":`)."""
        ref, depth, why = locate(self)
        why = here or why
        if ref is not None and ref.module is None and not why:  # workers import the file
            line = unguarded_line(ref.file)
            if line is not None:
                why = (f"{ref.file}:{line} tunes from the script's top level, which every "
                       "worker would run again; under `if __name__ == \"__main__\":` it is "
                       "tuned in isolated workers")
        call_kwargs = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        launch = {k: v for k, v in call_kwargs.items() if k in CALL_LAUNCH_OPTIONS}
        bound = {**self.nargs, **{k: v for k, v in call_kwargs.items() if k not in launch}}
        entries = tuple(next((i for i, c in enumerate(self.configs) if c is p), p)
                        for p in pruned)
        candidates = [*listed.points,
                      baseline_config(listed.space, bind(listed.space, traits))]
        launched = {p.key(): self._launched(kwargs["grid"], bound, launch,
                                            listed.triton_config(p)) for p in candidates}
        grids = {k: grid for k, (grid, _) in launched.items()}
        compiled = {k: kw for k, (_, kw) in launched.items()}
        if not all(isinstance(v, (int, float, bool, str, type(None)))
                   for kw in compiled.values() for v in kw.values()):
            compiled = {}  # a heuristic made an object: such configs compile at their launch
        flat = flatten(bound)  # a descriptor's or a tuple's tensors: arguments of their own
        outputs = self.outputs if self.outputs is not None else tuple(
            n for n in stored_arguments(self)
            if hasattr(bound.get(n), "dtype") or isinstance(flat.get(n), Nested))
        tolerances = {leaf: tolerance for n, tolerance in self.tolerances.items()
                      for leaf in leaves_of(flat, (n,))}
        call = CallSite(depth=depth, problem=problem(self._key_names(kwargs), key, pruned),
                        entries=entries, grids=grids, compiled=compiled, launch=launch,
                        outputs=leaves_of(flat, outputs),
                        scratch=leaves_of(flat, self.scratch),
                        features=self.features, tolerances=tolerances,
                        reference=self.reference, kernel=launched_source(self),
                        absent=tuple(n for n in (*getattr(self, "reset_to_zero", ()),
                                                 *self.restore_value, *self.scratch)
                                     if not hasattr(bound.get(n), "dtype")))
        # Draw 0 of the tuner's seed (the Tuner's default is 0) is the call's own data.
        inputs = CallerData(bound, seed=self.options.get("seed", 0))
        why = why or _unpicklable(call, inputs)
        if why:  # as Triton's autotuner would: tuned here, without isolation
            log.info("%s is tuned in this process, not in isolated workers (%s): a config that "
                     "hangs or crashes does so in the program, as under triton.autotune",
                     self.base_fn.__name__, why)
            ref = TaskRef("", self.base_fn.__name__, inputs, call=call).here(self)
        else:
            assert ref is not None
            ref = TaskRef(ref.file, ref.name, inputs, module=ref.module, call=call)
        policy, env = self._gate()
        options = {k: v for k, v in self.options.items() if k not in ("policy", "env")}
        budget = options.pop("budget", len(pruned))
        options.setdefault("store", None if self.persist else _scratch_store())
        if isinstance(options["store"], (str, os.PathLike)) or options["store"] is None:
            options["store"] = open_store(options["store"])
        # A Ctrl-C keeps what was measured and stops the program, as it was asked to: its
        # launch never runs a half-tuned config.
        options.setdefault("on_interrupt", "raise")
        tuner = Tuner(make_task(self, call, pruned), ref, policy=policy, env=env, traits=traits,
                      budget=budget if isinstance(budget, Budget) else Budget(configs=budget),
                      here=self, **options)
        try:
            result = tuner.run()
        except BaselinesFailed as e:
            if why or not e.raised or self.reference is not None:
                raise
            try:
                self._launch_each(args, kwargs, allowed)
            except Exception:  # the program's own error: `_choose` records the tuning, and
                raise e from None  # raises it as Triton's autotuner would
            return self._tune(args, kwargs, key, pruned, listed, traits, allowed,
                              here=f"the baseline configs raised in isolated workers, not in "
                                   f"this process ({str(e)[:200]})")
        finally:  # why each config lost, also when none is left
            for trial in getattr(tuner, "trials", []):
                if trial.status is not Outcome.OK and trial.reason is not None:
                    log.debug("%s: rejected config %s: %s", self.base_fn.__name__,
                              trial.config.text(), trial.reason.line())
        self.last_result = result
        assert result.best is not None
        return result

    def _launch_each(self, args: tuple[Any, ...], kwargs: dict[str, Any], allowed: list[Any]
                     ) -> None:
        """Each config the policy allows launched here as Triton's benchmark launches it,
        hooks and all: after every baseline raised in the workers (a hook, a compile error in
        the program's kernel), the program gets the exception it would get under
        triton.autotune; one Triton's benchmark passes over (out of resources) is passed."""
        from triton.compiler.errors import CompileTimeAssertionFailure
        from triton.runtime import errors

        passed_over = tuple(e for e in (errors.OutOfResources, CompileTimeAssertionFailure,
                                        getattr(errors, "PTXASError", None)) if e is not None)
        handling = sys.exc_info()[1]
        try:
            for config in allowed:
                current = {**kwargs, **config.all_kwargs()}
                full_nargs = {**self.nargs, **current}
                if config.pre_hook is not None:
                    config.pre_hook(full_nargs)
                self.pre_hook(full_nargs)
                try:
                    self.fn.run(*args, **current)
                except passed_over:
                    continue
                self.post_hook(full_nargs, exception=None)
        except Exception as own:  # shown as Triton shows it, not as raised while handling the
            _unchain(own, handling)  # tuning's failure (this is called from its handlers)
            raise

    def _launched(self, grid: Any, bound: Args, launch: dict[str, Any], config: Any
                  ) -> tuple[tuple[int, ...], dict[str, Any]]:
        """One config's launch grid, and the keyword arguments the jit function gets (launch
        options, the config's values, what inner heuristics add), as Triton works them out."""
        kwargs = {**launch, **config.all_kwargs()}
        meta = {**bound, **kwargs}
        try:
            for link in chain(self.fn):
                if isinstance(link, Heuristics):  # as Triton's: without signature defaults
                    for name, heuristic in link.values.items():
                        meta[name] = kwargs[name] = heuristic(meta)
            # The grid gets what Triton's binder gives it: the kernel's parameters, defaults
            # included, and no launch options (num_warps and the like are not parameters).
            meta = {**self._defaults, **meta}
            bound_args = {n: meta[n] for n in jit_function(self).arg_names if n in meta}
            return (tuple(int(g) for g in grid(bound_args)) if callable(grid)
                    else tuple(grid)), kwargs
        except Exception as e:  # the program's grid or heuristic: its own error, as under
            e.add_note(f"(tunegate: working out the launch grid of {self.base_fn.__name__} "
                       f"for config {config})")  # triton.autotune, naming the config
            raise


def _traits(tuner: Autotuner) -> Any:
    from ..policy import detect_traits

    return detect_traits(jit_function(tuner))


def _defining_module() -> str | None:
    """The module outside tunegate and triton whose code is making this autotuner (it may
    wrap a kernel of another module: `kernel = triton.autotune(...)(lib.kernel)`)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name.split(".")[0] not in ("tunegate", "triton"):
            return name
        frame = frame.f_back
    return None


def _unchain(error: BaseException, handled: BaseException | None) -> None:
    """Cut `handled` from the implicit context of `error` and of every exception behind it."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if error.__context__ is handled:
            error.__context__ = None
        error = error.__cause__ or error.__context__  # type: ignore[assignment]


def _called(tuner: Autotuner, listed: Configs, kwargs: Mapping[str, Any]) -> Any:
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
