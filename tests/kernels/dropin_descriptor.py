"""The #10474 tensor-descriptor copy under the drop-in: 16-byte and 128-byte fp32 tiles, at one
and three stages; only the 16-byte tile at three stages is wrong (it crashes) on an H200."""

import tunegate.triton as triton
from tests.kernels import gpu_faults

td_copy = triton.autotune(
    configs=[triton.Config({"XBLOCK": x, "CHUNK": 1024, "NUM_STAGES": s,
                            "INDEXING": "tensor_descriptor"}) for x in (4, 32) for s in (1, 3)],
    key=["n"], outputs=("out_ptr",), reference=lambda in_ptr, out_ptr, n: in_ptr,
)(gpu_faults.td_copy)
