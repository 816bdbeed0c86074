"""A split sum whose configs zero the output in their own `pre_hook`, pruned by a function."""

import tunegate.triton as triton  # was: import triton
import triton.language as tl


def zero_output(nargs):
    nargs["out_ptr"].zero_()


def keep_small_blocks(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= 32]


@triton.autotune(configs=[triton.Config({"BLOCK": b, "SPLIT": 2}, pre_hook=zero_output)
                          for b in (16, 32, 64)],
                 key=["n"], prune_configs_by={"early_config_prune": keep_small_blocks})
@triton.jit
def split_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SPLIT: tl.constexpr):
    part = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(part * BLOCK, n, BLOCK * SPLIT):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))
