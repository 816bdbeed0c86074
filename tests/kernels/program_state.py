"""Kernels whose launch reads state the program sets up at run time (a value or a flag set
under `if __name__ == "__main__":`, here by the test): a worker process that imports this
module finds the module's defaults, the program does not."""

import tunegate.triton as triton  # was: import triton
import triton.language as tl

STATE: dict[str, float] = {}
SETTINGS = {"fast": False}  # a library's default; the program switches it on


def fill_bias(nargs):
    nargs["bias_ptr"].fill_(STATE["bias"])


@triton.autotune(configs=[triton.Config({"BLOCK": b}, pre_hook=fill_bias) for b in (32, 64)],
                 key=["n"])
@triton.jit
def add_bias(x_ptr, bias_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(bias_ptr + offs, mask=mask),
             mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (32, 64, 128)], key=["n"])
@triton.heuristics({"FAST": lambda args: SETTINGS["fast"]})
@triton.jit
def exp_of(x_ptr, y_ptr, n, FAST: tl.constexpr, BLOCK: tl.constexpr):
    """y = exp(x); the FAST path forgets the base change at BLOCK=128 (a wrong config only
    where the program switched FAST on)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if FAST:
        if BLOCK == 128:
            y = tl.exp2(x)
        else:
            y = tl.exp2(x * 1.4426950408889634)
    else:
        y = tl.exp(x)
    tl.store(y_ptr + offs, y, mask=mask)
