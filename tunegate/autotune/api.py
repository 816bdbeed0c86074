"""The two ways in: `tune(task)` for scripts, and `@autotune(...)` in the spirit of triton.autotune.

Both tune in isolated worker processes that re-import the task's file, so a task (or decorated
kernel) must be defined at module level of a file. Guard a script's own calls with
`if __name__ == "__main__":`, as multiprocessing requires.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable, Mapping, Sequence

import torch

from ..space.space import Config, Space
from .store import Store, open_store
from .task import Args, Task, space_from_triton_configs
from .tuner import TuneError, TuneResult, Tuner
from .worker import TaskRef

__all__ = ["Autotuned", "RandomLike", "autotune", "tune"]


def _module_file_and_name(obj: Any, kernel: Any) -> tuple[str, str]:
    fn = getattr(kernel, "fn", kernel)
    module = sys.modules.get(fn.__module__)
    file = inspect.getsourcefile(fn)
    name = next((k for k, v in vars(module).items() if v is obj), None) if module else None
    if file is None or name is None:
        raise TuneError("define the task (or decorated kernel) at module level of a file, so "
                        "that worker processes can import it")
    return file, name


def tune(task: Task, **options: Any) -> TuneResult:
    """Tune a module-level `Task`; options are `Tuner`'s (policy, env, store, budget, …)."""
    file, name = _module_file_and_name(task, task.kernel)
    return Tuner(task, TaskRef(file, name), **options).run()


class RandomLike:
    """Fresh random inputs shaped like a real call's: floats redrawn, integers kept.

    Integer tensors usually hold indices or sizes, which random values would make invalid.
    """

    def __init__(self, args: Args) -> None:
        self.template: dict[str, Any] = {}
        for name, value in args.items():
            if isinstance(value, torch.Tensor):
                kept = None if value.dtype.is_floating_point else value.detach().cpu().clone()
                self.template[name] = ("tensor", tuple(value.shape), value.dtype, kept)
            else:
                self.template[name] = ("value", value)

    def __call__(self, seed: int, device: str) -> Args:
        gen = torch.Generator().manual_seed(seed)
        out: Args = {}
        for name, entry in self.template.items():
            if entry[0] == "value":
                out[name] = entry[1]
                continue
            _, shape, dtype, kept = entry
            if kept is not None:
                out[name] = kept.clone().to(device)
            else:
                out[name] = torch.randn(shape, generator=gen, dtype=torch.float32).to(
                    device=device, dtype=dtype)
        return out


class Autotuned:
    """A jitted kernel that tunes itself on the first call for each key, then reuses the best."""

    def __init__(self, kernel: Any, *, space: Space | None, configs: Sequence[Any] | None,
                 features: Mapping[str, str] | None, key: Sequence[str], outputs: Sequence[str],
                 grid: Callable[[Mapping[str, Any]], tuple[int, ...]],
                 reference: Callable[..., Any] | None, options: dict[str, Any]) -> None:
        points = None
        if space is None:
            if not configs:
                raise ValueError("autotune needs a `space` or a list of triton.Config `configs`")
            space, points = space_from_triton_configs(configs, features)
        self.kernel, self.key, self.options = kernel, list(key), options
        self.arg_names = list(getattr(kernel, "arg_names", []))
        self.task = Task(name=getattr(getattr(kernel, "fn", kernel), "__name__", "kernel"),
                         kernel=kernel, space=space, configs=points, grid=grid,
                         make_inputs=_no_inputs, outputs=tuple(outputs), reference=reference)
        self.best: dict[str, Config] = {}
        self.last_result: TuneResult | None = None

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Args:
        bound = dict(zip(self.arg_names, args))
        bound.update(kwargs)
        return bound

    def _problem(self, bound: Args) -> str:
        parts = []
        for name in self.key:
            v = bound[name]
            parts.append(f"{name}:{tuple(v.shape)}:{v.dtype}" if isinstance(v, torch.Tensor)
                         else f"{name}={v}")
        return ",".join(parts)

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        bound = self._bind(args, kwargs)
        problem = self._problem(bound)
        if problem not in self.best:
            file, name = _module_file_and_name(self, self.kernel)
            inputs = RandomLike(bound)
            task = self.task.model_copy(update={"make_inputs": inputs,
                                                "key": lambda _args, p=problem: p})
            result = Tuner(task, TaskRef(file, name, inputs), **self.options).run()
            self.last_result = result
            assert result.best is not None
            self.best[problem] = Config(values=result.best)
        self.task.run(bound, self.best[problem])


def _no_inputs(seed: int, device: str) -> Args:
    raise TuneError("a decorated kernel draws its inputs from the call it is tuned on")


def autotune(*, key: Sequence[str], outputs: Sequence[str],
             grid: Callable[[Mapping[str, Any]], tuple[int, ...]],
             space: Space | None = None, configs: Sequence[Any] | None = None,
             features: Mapping[str, str] | None = None,
             reference: Callable[..., Any] | None = None,
             store: Store | str | None = None, **options: Any) -> Callable[[Any], Autotuned]:
    """Decorate a `@triton.jit` kernel; call it as `kernel(*args)` and it tunes per `key`.

    `configs` may be a list of `triton.Config`; `features` binds their parameter names to
    features. Other options go to the `Tuner` (budget, strategy, policy, …).
    """
    if isinstance(store, (str, type(None))):
        store = open_store(store)
    options["store"] = store

    def wrap(kernel: Any) -> Autotuned:
        return Autotuned(kernel, space=space, configs=configs, features=features, key=key,
                         outputs=outputs, grid=grid, reference=reference, options=options)

    return wrap
