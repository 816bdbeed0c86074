"""Route every `triton.autotune` of a program through tunegate, without editing the program.

`install()` swaps Triton's `Autotuner` class for tunegate's subclass in the places Triton binds
it. `triton.autotune` looks the class up when it decorates, so every kernel decorated after
`install()` (also through `from triton import autotune`) is gated and checked by tunegate.
Kernels decorated before it are left alone; `wrap()` converts one of those.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["install", "installed", "uninstall", "wrap"]

_SAVED: dict[tuple[str, str], Any] = {}
_PLACES = (("triton.runtime.autotuner", "Autotuner"), ("triton.runtime", "Autotuner"),
           ("triton", "Autotuner"))


def install() -> None:
    """Make every later `triton.autotune` / `triton.runtime.Autotuner(...)` tune through tunegate."""
    import triton.runtime.autotuner  # noqa: F401  (the modules to patch must be loaded)

    from .autotune.dropin import Autotuner

    for module_name, attr in _PLACES:
        module = sys.modules[module_name]
        if hasattr(module, attr) and (module_name, attr) not in _SAVED:
            _SAVED[(module_name, attr)] = getattr(module, attr)
            setattr(module, attr, Autotuner)


def uninstall() -> None:
    """Put Triton's own `Autotuner` back; kernels already decorated keep tunegate's."""
    for (module_name, attr), original in _SAVED.items():
        setattr(sys.modules[module_name], attr, original)
    _SAVED.clear()


def installed() -> bool:
    return bool(_SAVED)


def wrap(kernel: Any, **tunegate_options: Any) -> Any:
    """tunegate's `Autotuner` with the configs, key, hooks and pruning of Triton's `kernel`.

    `kernel` is a `triton.autotune`d kernel (an `Autotuner`, maybe under `@triton.heuristics`),
    e.g. one imported from an installed library. The outermost Autotuner in its `.fn` chain is
    replaced; heuristics around or inside it are kept.
    """
    from triton.runtime.autotuner import Heuristics

    from .autotune.dropin import Autotuner, DropInError, chain

    links = chain(kernel)
    index = next((i for i, k in enumerate(links) if hasattr(k, "configs") and hasattr(k, "keys")),
                 None)
    if index is None:
        raise DropInError(f"{kernel!r} has no triton.autotune in its .fn chain")
    old = links[index]
    prune = {"perf_model": old.perf_model, "top_k": old.configs_top_k,
             "early_config_prune": old.early_config_prune}
    new = Autotuner(old.fn, old.arg_names, old.configs, old.keys, old.reset_to_zero,
                    old.restore_value,
                    pre_hook=old.pre_hook if old.user_defined_pre_hook else None,
                    post_hook=old.post_hook if old.user_defined_post_hook else None,
                    prune_configs_by=prune, do_bench=old._do_bench,
                    cache_results=bool(getattr(old, "cache_results", False)), **tunegate_options)
    new.origin = old
    for outer in reversed(links[:index]):
        if not isinstance(outer, Heuristics):
            raise DropInError(f"cannot rebuild {outer!r} around the new autotuner")
        new = Heuristics(new, outer.arg_names, outer.values)
    return new
