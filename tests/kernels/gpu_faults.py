"""Two real GPU faults from shared/evidence/known_bugs_h200.txt, as tuning tasks.

- TD_TASK: tensor-descriptor loads in a tl.range with num_stages=3 and a 16-byte tile raise a
  sticky `misaligned address` that poisons the CUDA context (triton-lang/triton#10474).
- WS_TASK: `warp_specialize=True` on Hopper fails inside the compiler (triton-lang/triton#8311).
"""

import torch
import triton
import triton.language as tl

from tunegate.autotune import Task
from tunegate.space import Boolean, Choice, Parameter, PowerOfTwo, Space

if torch.cuda.is_available():  # device-side tensor descriptors need scratch memory
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))


@triton.jit
def td_copy(in_ptr, out_ptr, n, XBLOCK: tl.constexpr, CHUNK: tl.constexpr,
            NUM_STAGES: tl.constexpr, INDEXING: tl.constexpr):
    offset = tl.program_id(0) * CHUNK
    for _ in tl.range(0, CHUNK, XBLOCK, num_stages=NUM_STAGES):
        val = tl.make_tensor_descriptor(in_ptr, shape=[n], strides=[1],
                                        block_shape=[XBLOCK]).load([offset])
        tl.make_tensor_descriptor(out_ptr, shape=[n], strides=[1],
                                  block_shape=[XBLOCK]).store([offset], val)
        offset += XBLOCK


def td_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    n = 1024 * 64
    return {"in_ptr": torch.randn(n, generator=g).to(device),
            "out_ptr": torch.empty(n, device=device), "n": n}


TD_TASK = Task(
    name="td_copy", kernel=td_copy,
    space=Space(parameters={
        "XBLOCK": Parameter(domain=Choice(choices=(32, 4), default=32)),
        "CHUNK": Parameter(domain=Choice(choices=(1024,), default=1024)),
        "NUM_STAGES": Parameter(domain=Choice(choices=(1, 3), default=1),
                                features=["range_num_stages"]),
        "INDEXING": Parameter(domain=Choice(choices=("tensor_descriptor",)),
                              features=["tensor_descriptor"]),
    }),
    grid=lambda meta: (meta["n"] // meta["CHUNK"],), make_inputs=td_inputs,
    outputs=("out_ptr",), reference=lambda in_ptr, out_ptr, n: in_ptr)


@triton.jit
def ws_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, WS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, K, BLOCK_K, warp_specialize=WS):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def ws_inputs(seed, device):
    g = torch.Generator().manual_seed(seed)
    return {"a_ptr": torch.randn(512, 512, generator=g).to(device, torch.float16),
            "b_ptr": torch.randn(512, 512, generator=g).to(device, torch.float16),
            "c_ptr": torch.empty(512, 512, device=device, dtype=torch.float16),
            "M": 512, "N": 512, "K": 512}


WS_TASK = Task(
    name="ws_matmul", kernel=ws_matmul,
    space=Space(parameters={
        "BLOCK_M": Parameter(domain=PowerOfTwo(low=64, high=128)),
        "BLOCK_N": Parameter(domain=PowerOfTwo(low=64, high=64)),
        "BLOCK_K": Parameter(domain=PowerOfTwo(low=64, high=64)),
        "WS": Parameter(domain=Boolean(), features=["range_warp_specialize"]),
        "num_warps": Parameter(domain=Choice(choices=(4,), default=4)),
    }),
    grid=lambda meta: (meta["M"] // meta["BLOCK_M"], meta["N"] // meta["BLOCK_N"]),
    make_inputs=ws_inputs, outputs=("c_ptr",),
    reference=lambda a_ptr, b_ptr, c_ptr, M, N, K: (a_ptr.double() @ b_ptr.double()).half(),
    tolerances={"float16": (1e-2, 1e-1)})
