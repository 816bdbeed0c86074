"""A kernel of another module, autotuned here (`kernel = triton.autotune(...)(lib.kernel)`):
workers find it where it was made, not in the module of its jit function."""

import tunegate.triton as triton
from tests.kernels import pipelined_copy

copy = triton.autotune(configs=[triton.Config({"BLOCK": 32, "STAGES": 1}),
                                triton.Config({"BLOCK": 64, "STAGES": 1})],
                       key=["n"])(pipelined_copy.chunked_copy)
