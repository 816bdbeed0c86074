"""A kernel whose configs' pre_hook reads state the program sets up at run time (a value filled
in under `if __name__ == "__main__":`, here by the test): a worker process that imports this
module finds it empty, this process does not."""

import tunegate.triton as triton  # was: import triton
import triton.language as tl

STATE: dict[str, float] = {}


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
