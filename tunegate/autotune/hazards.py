"""Race hazards: what could make two launches of one config on one input come out different.

A race needs work in flight at once that a missing wait lets overlap: pipelined or TMA loads,
warp-specialized or clustered programs, wgmma's asynchronous dots, or programs that share
addresses (atomics, an argument both loaded and stored, a store read back). A config with none
of these computes each program's output in order from inputs no other program writes, so what
it can get wrong depends on the input, not on the launch: its stress check is one launch on
each of its fresh draws (`StressCheck.resolved`), and among configs timed alike it wins over ones
that carry a hazard for no measured gain (`winner`).
"""

from __future__ import annotations

from ..policy import Region
from ..space.space import LAUNCH_DEFAULTS, Config

__all__ = ["RACING_FEATURES", "RACING_TRAITS", "race_hazards"]

RACING_FEATURES = frozenset({"num_stages", "range_num_stages", "range_multi_buffer",
                             "range_warp_specialize", "tensor_descriptor", "block_ptr",
                             "num_ctas"})
"""Features whose use puts memory traffic in flight asynchronously (see the module docstring);
`block_ptr` because Triton may lower block-pointer loads to TMA."""

RACING_TRAITS = frozenset({"atomics", "in_place", "store_then_load", "dot", "tensor_descriptor",
                           "block_ptr", "inline_asm", "opaque_call"})
"""Kernel traits that make every config of the kernel racy: shared addresses, async dots/loads,
code whose effects are not read (assembly, a helper without source)."""


def race_hazards(region: Region, config: Config, launch_unread: bool = False
                 ) -> tuple[str, ...]:
    """Each race hazard of `config` of the region's kernel, in words; () if it has none.
    `launch_unread`: the task launches through a function of its own, which may launch more
    than the kernel whose source was read."""
    traits = region.traits
    if traits is None or launch_unread:
        return ("the kernel's source was not read" if traits is None else
                "the task's own launch function (what it launches beyond the kernel is not read)",)
    found = [f"the kernel's {t} ({traits.evidence[t]})"
             for t in sorted(RACING_TRAITS & traits.traits)]
    used = region.binding.used(config.values)
    loops = [lp for lp in traits.loops if lp.kind not in _NOT_PIPELINED]  # what num_stages
    racing = RACING_FEATURES if loops else RACING_FEATURES - {"num_stages"}  # pipelines
    found += [f"{f} in {_where(used[f])}" for f in sorted(racing & set(used))]
    stages = config.values.get("num_stages", LAUNCH_DEFAULTS["num_stages"])
    if (loops and not {"num_stages", "range_num_stages"} & set(used)
            and isinstance(stages, int) and stages > 1):  # set where the space cannot see it
        found.append(f"num_stages={stages} pipelines the kernel's loops")
    return tuple(found)


_NOT_PIPELINED = ("tl.static_range", "while")  # unrolled at compile time; not a for loop


def _where(use: object) -> str:
    return "every program" if use is True else f"loops {use}"
