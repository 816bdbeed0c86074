"""triton-lang/triton#10474: tensor-descriptor loads in a tl.range with num_stages >= 3 and a
per-stage tile under 128 bytes (here 4 floats, 16 bytes) raise a sticky CUDA `misaligned address`
that kills the worker (reproduced on an H200 with Triton 3.6.0; fixed in 3.9.0)."""

import torch
import triton
import triton.language as tl

from tunegate.autotune.reproducer import Reproducer
from tunegate.autotune.task import Task
from tunegate.outcome import Outcome
from tunegate.space import Choice, Parameter, Space

if torch.cuda.is_available():  # device-side tensor descriptors need scratch memory
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))


@triton.jit
def td_copy(in_ptr, out_ptr, n, XBLOCK: tl.constexpr, CHUNK: tl.constexpr,
            NUM_STAGES: tl.constexpr):
    offset = tl.program_id(0) * CHUNK
    for _ in tl.range(0, CHUNK, XBLOCK, num_stages=NUM_STAGES):
        val = tl.make_tensor_descriptor(in_ptr, shape=[n], strides=[1],
                                        block_shape=[XBLOCK]).load([offset])
        tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[1],
                                  block_shape=[XBLOCK]).store([offset], val)
        offset += XBLOCK


def make_inputs(seed: int, device: str) -> dict:
    g = torch.Generator().manual_seed(seed)
    n = 1024 * 64
    return {"in_ptr": torch.randn(n, generator=g).to(device),
            "out_ptr": torch.empty(n, device=device), "n": n}


TASK = Task(
    name="repro_td_small_tile", kernel=td_copy,
    space=Space(parameters={
        "XBLOCK": Parameter(domain=Choice(choices=(4,), default=4)),
        "CHUNK": Parameter(domain=Choice(choices=(1024,), default=1024)),
        "NUM_STAGES": Parameter(domain=Choice(choices=(1, 3, 4), default=1),
                                features=["range_num_stages"]),
    }),
    grid=lambda meta: (meta["n"] // meta["CHUNK"],), make_inputs=make_inputs,
    outputs=("out_ptr",), reference=lambda in_ptr, out_ptr, n: in_ptr)

REPRODUCER = Reproducer(task=TASK, shows=(Outcome.CRASHED, Outcome.ERROR))
