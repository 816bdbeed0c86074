"""A tuning task: a kernel, its space, how to launch it, how to make inputs and what is right.

A kernel file declares one or more `Task`s at module level; `tunegate tune FILE[:NAME]` and the
isolated workers find them there by name, so nothing about a task needs to be pickled.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._text import short_hash
from ..errors import TunegateError
from ..space.domains import Choice
from ..space.space import LAUNCH_DEFAULTS, LAUNCH_OPTIONS, Config, Parameter, Space
from .fingerprint import callable_text, digest, jit_dependencies, source_of

__all__ = ["Task", "TaskError", "kernel_hash", "space_from_triton_configs",
           "triton_config_values"]

Args = dict[str, Any]


class TaskError(ValueError, TunegateError):
    """A task's configs cannot be read: an empty or foreign list, an option it cannot hold."""


class Task(BaseModel):
    """Everything the tuner needs to find the fastest correct config of one kernel.

    - `kernel`: the `@triton.jit` function.
    - `space`: its tunable parameters; launch options (`num_warps`, …) go to the launch, the
      rest to the kernel as constexprs. `configs` optionally lists the only points to try.
    - `grid(meta)`: the launch grid from the arguments and config values (as in triton.autotune).
    - `make_inputs(seed)`: fresh random arguments (tensors and scalars) for one draw.
    - `outputs`: names of the arguments the kernel writes; poisoned before every run, unless
      the kernel also reads them (see `restore_value`), and compared after.
    - `restore_value`: arguments the kernel reads and writes (in place): restored to their
      drawn value before every launch, never poisoned, compared after (as in triton.autotune).
    - `reset_to_zero`: arguments the kernel accumulates into (split-K with atomics): zeroed
      before every launch, compared after.
    - `scratch`: arguments whose contents after a launch are unspecified (workspaces): never
      compared, never required to hold random data.
    - `reference(**args)`: expected outputs (a tensor, a tuple in `outputs` order, a dict, or
      None after writing them in place). Without it, the baseline config is the reference.
    - `tolerances`: per-dtype (rtol, atol) overrides, keyed by dtype name ('float16', …).
    - `compile_kwargs(config)`: for a task with its own `launch`, the keyword arguments that
      launch gives the kernel for `config` (constexprs, launch options): with it, compile
      workers compile configs ahead as for any task.
    - `do_bench`: on a GPU, times a launch as `do_bench(fn, quantiles=(0.5, 0.2, 0.8))[0]`
      (the drop-in passes triton.autotune's own); else `triton.testing.do_bench`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    name: str
    kernel: Any
    space: Space
    grid: Callable[[Mapping[str, Any]], tuple[int, ...]] | tuple[int, ...]
    make_inputs: Callable[[int], Args]
    outputs: tuple[str, ...]
    restore_value: tuple[str, ...] = ()
    reset_to_zero: tuple[str, ...] = ()
    scratch: tuple[str, ...] = ()
    reference: Callable[..., Any] | None = None
    configs: tuple[Config, ...] | None = None
    launch: Callable[[Args, Config], None] | None = None
    tolerances: dict[str, tuple[float, float]] = Field(default_factory=dict)
    key: Callable[[Args], str] | None = None
    do_bench: Callable[..., Any] | None = None
    compile_kwargs: Callable[[Config], dict[str, Any]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _triton_configs(cls, data: Any) -> Any:
        """`configs=[triton.Config(...), ...]` become points; without a `space`, they span it."""
        configs = data.get("configs") if isinstance(data, dict) else None
        if not configs or not any(_is_triton_config(c) for c in configs):
            return data
        if data.get("space") is None:
            space, points = space_from_triton_configs(configs)
            return {**data, "space": space, "configs": points}
        return {**data, "configs": tuple(_point_in(data["space"], c) for c in configs)}

    def kernel_hash(self) -> str:
        return kernel_hash(self.kernel)

    def fingerprint(self) -> str:
        """A hash of everything in the task that decides whether a config's output is right:
        the kernel and the jit functions it calls, grid, launch, reference and input maker,
        outputs, restored and zeroed arguments, tolerances and the space. A stored result
        made under another fingerprint is stale."""
        parts = [source_of(self.kernel)]
        # Helpers by source, not module name: one file imported under two names is one task.
        parts += [source_of(f) for f in jit_dependencies(self.kernel)]
        parts += [callable_text(c) for c in (self.grid, self.launch, self.reference,
                                              self.make_inputs, self.key)]
        parts += [repr(self.outputs), repr(self.restore_value), repr(self.reset_to_zero),
                  repr(sorted(self.tolerances.items())), self.space.model_dump_json(),
                  repr(None if self.configs is None else [c.key() for c in self.configs])]
        if self.scratch:  # only when set: tasks without scratch keep their fingerprint
            parts.append(repr(self.scratch))
        return digest(parts)

    def written_in_place(self) -> tuple[str, ...]:
        """Arguments restored before every launch, timing launches too: those named in
        `restore_value`; outputs loaded by the kernel's source where trait detection found an
        in-place argument (never poisoned); and arguments that are not outputs which the
        source both reads (a load, or an atomic into them) and writes, so that what a timing
        launch leaves is the output of one launch, as the check after it needs. A declared
        output that only an atomic reads stays an output: poisoned unless it is zeroed."""
        from ..policy import detect_traits
        from ..policy.traits import TraitError
        from .outputs import argument_accesses

        named = [n for n in self.restore_value]
        try:
            seen = argument_accesses(self.kernel)
            in_place = "in_place" in detect_traits(self.kernel).traits
        except TraitError:
            return tuple(dict.fromkeys(named))
        if in_place and self.launch is None:
            named += [n for n in self.outputs if n in seen.read]
        named += [n for n in seen.read_and_written() if n not in self.outputs]
        return tuple(dict.fromkeys(named))

    def problem_key(self, args: Args) -> str:
        """A string naming the problem size: shapes and dtypes of tensors, scalar values."""
        if self.key is not None:  # the dtypes decide tolerances and code: always in the key
            dtypes = ",".join(f"{n}:{str(v.dtype).removeprefix('torch.')}"
                              for n, v in args.items() if hasattr(v, "dtype"))
            return f"{self.key(args)} [{dtypes}]" if dtypes else str(self.key(args))
        parts = []
        for name, value in args.items():
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                shape = "x".join(str(s) for s in value.shape)
                parts.append(f"{name}:{shape}:{str(value.dtype).removeprefix('torch.')}")
            elif isinstance(value, (int, float, bool, str)):
                parts.append(f"{name}={value}")
        return ",".join(parts)

    def run(self, args: Args, config: Config) -> None:
        """Launch the kernel once with `config` on `args`."""
        if self.launch is not None:
            self.launch(args, config)
            return
        kernel_kwargs, options = split_config(config)
        meta = {**args, **config.values}
        grid = self.grid(meta) if callable(self.grid) else self.grid
        self.kernel[grid](**args, **kernel_kwargs, **options)


def split_config(config: Config) -> tuple[dict[str, Any], dict[str, Any]]:
    """(constexpr kwargs, launch options); unset launch options are left to Triton."""
    kernel_kwargs = {k: v for k, v in config.values.items() if k not in LAUNCH_OPTIONS}
    options = {k: v for k, v in config.values.items() if k in LAUNCH_OPTIONS and v is not None}
    return kernel_kwargs, options


def kernel_hash(kernel: Any) -> str:
    """A hash of the kernel's source alone: what the store's history is listed by."""
    return short_hash(source_of(kernel))


def _is_triton_config(obj: Any) -> bool:
    return hasattr(obj, "kwargs") and hasattr(obj, "all_kwargs") and hasattr(obj, "num_warps")


def triton_config_values(config: Any) -> dict[str, Any]:
    """A `triton.Config`'s constexprs and launch options as one flat mapping of values.

    A launch option the config leaves unset (`maxnreg=None`) stays None: Triton's default.
    """
    values = dict(config.kwargs)
    for opt in LAUNCH_OPTIONS:
        values[opt] = getattr(config, opt, None)
    return values


def _point_in(space: Space, config: Any) -> Any:
    """A `triton.Config` as a point of `space`; a launch option the space lacks must be Triton's
    default, or the config would silently lose it."""
    if not _is_triton_config(config):
        return config
    values = dict(config.kwargs)
    for opt, value in triton_config_values(config).items():
        if opt in config.kwargs:
            continue
        if opt in space.parameters:
            values[opt] = value
        elif value != LAUNCH_DEFAULTS.get(opt):
            raise TaskError(f"{config} sets {opt}={value!r}, which the task's space has no "
                             "parameter for")
    return space.complete(values)


def space_from_triton_configs(configs: Sequence[Any], features: Mapping[str, str] | None = None
                              ) -> tuple[Space, tuple[Config, ...]]:
    """A space spanning a list of `triton.Config`s, and the listed points in it.

    `features` binds parameter names to features (e.g. {"INNER_STAGES": "range_num_stages"});
    the launch `num_stages` is bound to the `num_stages` feature unless `features` says else.
    A constexpr some configs leave out is None in those points (the kernel's default applies).
    """
    if not configs:
        raise TaskError("the list of triton.Config is empty")
    bad = [c for c in configs if not _is_triton_config(c)]
    if bad:
        raise TaskError(f"expected triton.Config objects, got {bad[0]!r}")
    points = [triton_config_values(c) for c in configs]
    names = list(dict.fromkeys(n for p in points for n in p))
    points = [{n: p.get(n) for n in names} for p in points]
    features = dict(features or {})
    features.setdefault("num_stages", "num_stages")
    params = {}
    for name in names:
        seen = list(dict.fromkeys(p[name] for p in points))
        params[name] = Parameter(domain=Choice(choices=tuple(seen), default=seen[0]),
                                 features=(features[name],) if name in features else ())
    space = Space(parameters=params)
    return space, tuple(space.complete(p) for p in points)
