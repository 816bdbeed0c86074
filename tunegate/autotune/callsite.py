"""One drop-in call as a tuning task: the call site a worker re-creates, and the triton.Config
behind each point of the space made from the kernel's config list."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
import triton
from triton.runtime.autotuner import Autotuner as TritonAutotuner
from triton.runtime.autotuner import Heuristics

from .._text import short_hash
from ..kernelfile import chain, jit_function
from ..space.space import Config
from .fingerprint import source_of
from .nested import assemble
from .task import Args, Task, space_from_triton_configs
from .tuner import TuneError

__all__ = ["CallSite", "Configs", "key_text", "make_task", "problem"]


@dataclass(frozen=True)
class CallSite:
    """What a worker needs, besides the module it re-imports, to launch one call's configs.

    The grid (often a lambda over local sizes) is evaluated here, per config, because a worker
    cannot import a closure; so are the keyword arguments each config's launch gives the jit
    function (`compiled`: what a compile worker needs to compile it ahead, without the call's
    tensors, and what a run worker launches the jit function with where only heuristics lie
    between: their values as the program worked them out, whatever state they read).
    `entries` are indices into the autotuner's `configs`, or (picklable) configs that pruning
    made.
    """

    depth: int
    problem: str
    entries: tuple[Any, ...]
    grids: dict[str, tuple[int, ...]]
    launch: dict[str, Any]
    outputs: tuple[str, ...]
    scratch: tuple[str, ...] = ()
    features: dict[str, str] = field(default_factory=dict)
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)
    reference: Callable[..., Any] | None = None
    compiled: dict[str, dict[str, Any]] = field(default_factory=dict)
    kernel: str = ""  # the hash of the kernel the program launches (`launched_source`)
    absent: tuple[str, ...] = ()  # arguments of this call that are None or not passed, which
    # reset_to_zero, restore_value and scratch skip (as Triton's hooks do)

    def task(self, obj: Any) -> Task:
        """The task of the autotuner `depth` steps down `obj` (re-imported by the worker);
        refused where the kernel imported is not the one the program launches (the module's
        name found another file after a change of working folder, or the file was edited)."""
        tuner = chain(obj)[self.depth]
        if self.kernel and launched_source(tuner) != self.kernel:
            raise TuneError(f"the {jit_function(tuner).__name__} imported here is not the one "
                            "the program launches (its source differs: another file by that "
                            "module name, or the file changed since the program imported it)")
        configs = [tuner.configs[e] if isinstance(e, int) else e for e in self.entries]
        return make_task(tuner, self, configs)


def launched_source(tuner: TritonAutotuner) -> str:
    """A hash of the source of the jit function `tuner` launches, as Triton read it when it
    was decorated (`JITFunction.src`): not re-read from a file a change of working folder or
    an edit may have made another."""
    jit = jit_function(tuner)
    return short_hash(getattr(jit, "src", None) or source_of(jit))


def key_text(names: Sequence[str], key: tuple[Any, ...]) -> str:
    """Triton's tuning key as text: `name=value` for the key arguments the call passed
    (`names`: Triton's key leaves out the others), then the dtypes."""
    return ",".join([f"{n}={_key_value(v)}" for n, v in zip(names, key)]
                    + [str(v) for v in key[len(names):]])


def _key_value(value: Any) -> str:
    """A key value as text; a tensor (a key that names a tensor argument) by its shape, not
    its thousands of elements: its dtype follows in the key."""
    return f"tensor{list(value.shape)}" if isinstance(value, torch.Tensor) else str(value)


def problem(names: Sequence[str], key: tuple[Any, ...], configs: Sequence[Any]) -> str:
    """The store's problem: the key, plus a digest of the candidate list it was tuned over."""
    digest = short_hash("|".join(str(c) for c in configs), 10)
    return f"{key_text(names, key)},configs={digest}"


class Configs:
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


def make_task(tuner: TritonAutotuner, call: CallSite, configs: Sequence[Any]) -> Task:
    listed = Configs(configs, call.features)
    reset = tuple(n for n in getattr(tuner, "reset_to_zero", ()) if n not in call.absent)
    links = chain(tuner)
    jit = links[-1]
    direct = all(isinstance(link, Heuristics) for link in links[1:-1])  # nothing to tune below

    def launch(flat: Args, point: Config) -> None:
        config = listed.triton_config(point)
        current = {**call.launch, **config.all_kwargs()}
        args = assemble(flat)  # a fresh descriptor (or tuple) around this launch's copies
        full = {**args, **current}
        if config.pre_hook is not None:
            config.pre_hook(full)
        if getattr(tuner, "user_defined_pre_hook", False):
            tuner.pre_hook(full)
        for name in reset:  # Triton's default pre_hook; a user pre_hook replaces it
            if not getattr(tuner, "user_defined_pre_hook", False):
                args[name].zero_()
        if point.key() not in call.grids:
            raise TuneError(f"no launch grid was worked out for {point.text()}")
        error: Exception | None = None
        try:
            if direct and point.key() in call.compiled:  # the heuristics' values as the
                # program worked them out, not again here from this process's state
                jit.run(grid=call.grids[point.key()], warmup=False, **args,
                        **call.compiled[point.key()])
            else:
                tuner.fn.run(grid=call.grids[point.key()], warmup=False, **args, **current)
        except Exception as e:
            error = e
            raise
        finally:
            if getattr(tuner, "user_defined_post_hook", False):
                tuner.post_hook(full, exception=error)

    return Task(name=jit_function(tuner).__name__, kernel=jit_function(tuner), space=listed.space,
                configs=listed.points, grid=(1,), make_inputs=_no_inputs, outputs=call.outputs,
                scratch=tuple(n for n in call.scratch if n not in call.absent),
                reference=call.reference, launch=launch, tolerances=call.tolerances,
                key=lambda _args: call.problem,
                restore_value=tuple(n for n in tuner.restore_value if n not in call.absent),
                compile_kwargs=(lambda point: call.compiled[point.key()]) if call.compiled
                else None,
                reset_to_zero=reset, do_bench=getattr(tuner, "_do_bench", None))


def _no_inputs(seed: int, device: str = "cpu") -> Args:
    raise TuneError("a drop-in kernel draws its inputs from the call it is tuned on")
