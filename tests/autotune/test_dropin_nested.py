"""Tensors inside other arguments (host tensor descriptors, tuples) are copied, checked and
left alone like any other under the drop-in (kernels in tests/kernels/dropin_nested.py)."""

from __future__ import annotations

import collections
import pickle

import torch
import triton

from tunegate.autotune.nested import Nested, assemble, flatten, leaves_of
from tests.kernels import dropin_nested as mod

M, N = 24, 32
Pair = collections.namedtuple("Pair", "first second")


def _grid(meta):
    return (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))


def _statuses(kernel) -> dict[int, str]:
    return {t.config["BUG"]: t.status for t in kernel.last_result.trials}


def test_a_wrong_config_writing_through_a_host_descriptor_is_rejected():
    x, y = torch.randn(M, N), torch.zeros(M, N)
    x_desc = mod.TensorDescriptor.from_tensor(x, [8, 8])
    mod.scale_desc[_grid](x_desc, mod.TensorDescriptor.from_tensor(y, [8, 8]), M, N)
    assert mod.scale_desc.best_config.kwargs["BUG"] == 0
    assert torch.equal(y, x * 2 + 1)
    assert _statuses(mod.scale_desc)[1] == "wrong"
    assert all(t.status == "ok" for t in mod.scale_desc.last_result.trials
               if t.config["BUG"] == 0)  # the right tiles are kept (nothing else differs)
    assert x_desc.block_shape == [mod.scale_desc.best_config.kwargs[k] for k in ("BM", "BN")]


def test_a_tensor_inside_a_descriptor_is_written_only_by_the_program_s_own_launch():
    x = torch.randn(M, N)
    before = x.clone()
    mod.bump_desc[_grid](mod.TensorDescriptor.from_tensor(x, [8, 8]), M, N)
    assert torch.equal(x, before + 1)  # tuning launched on copies, not on the caller's x


def test_a_wrong_config_writing_an_output_inside_a_tuple_is_rejected():
    src, a, b = torch.randn(100), torch.empty(100), torch.empty(100)
    mod.pair_scale[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](src, (a, b), 100)
    assert mod.pair_scale.best_config.kwargs["BUG"] == 0
    assert torch.equal(a, src * 3) and torch.equal(b, src + 1)
    wrong = [t for t in mod.pair_scale.last_result.trials if t.config["BUG"] == 1]
    assert wrong[0].status == "wrong" and "dst_pair[1]" in wrong[0].reason.line()
    assert all(t.status == "ok" for t in mod.pair_scale.last_result.trials
               if t.config["BUG"] == 0)


def test_flatten_names_each_nested_tensor_and_assemble_rebuilds_around_new_ones():
    t = [torch.zeros(4, 4) for _ in range(4)]
    desc = mod.TensorDescriptor.from_tensor(t[0], [2, 2])
    args = {"d": desc, "p": Pair(t[1], 3), "l": [t[2], (t[3], "x")], "n": 7, "plain": t[0]}
    flat = pickle.loads(pickle.dumps(flatten(args)))  # what a worker receives
    assert isinstance(flat["d"], Nested) and flat["n"] == 7 and flat["plain"] is not None
    assert leaves_of(flat, ("d", "p", "l", "n")) == ("d.base", "p[0]", "l[0]", "l[1][0]", "n")
    copies = {name: torch.ones(4, 4) for name in ("d.base", "p[0]", "l[0]", "l[1][0]")}
    launch = assemble({**flat, **copies})
    assert set(launch) == {"d", "p", "l", "n", "plain"}
    assert launch["d"].base is copies["d.base"] and launch["d"].block_shape == [2, 2]
    assert isinstance(launch["p"], Pair) and launch["p"].first is copies["p[0]"]
    assert launch["p"].second == 3
    assert launch["l"][0] is copies["l[0]"] and launch["l"][1] == (copies["l[1][0]"], "x")
    launch["d"].block_shape[0] = 4  # a pre_hook's change stays with its launch
    assert assemble({**flat, **copies})["d"].block_shape == [2, 2]
    assert desc.base is t[0] and desc.block_shape == [2, 2]  # the caller's, untouched
    assert assemble({"x": t[0]}) == {"x": t[0]}
