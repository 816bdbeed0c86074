"""A Helion kernel (Helion's examples/softmax.py) autotuned on a GPU through the adapter:
configs the policy disables are never compiled, experimental ones are checked before Helion
times them, and the tuned kernel is right.

Needs a CUDA GPU and Helion (`pip install tunegate[helion]`); skips cleanly otherwise.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu
helion = pytest.importorskip("helion", exc_type=ImportError)
hl = pytest.importorskip("helion.language", exc_type=ImportError)
torch = pytest.importorskip("torch")

from tunegate.helion import HelionGate  # noqa: E402
from tunegate.policy import Policy  # noqa: E402

# Removes some of what Helion's search proposes (pipelined loops, 32-warp configs) so the test
# sees the filter at work; the built-in rules mark range_flattens / range_multi_buffers
# experimental, which Helion proposes too.
POLICY = """schema = 1
[[rule]]
id = "test-no-deep-pipelines"
title = "test: no loop pipelined 3 deep or more"
action = "disable"
features = ["range_num_stages"]
match = "range_num_stages >= 3"
reason = "a test rule: shows disabled configs are never compiled"

[[rule]]
id = "test-no-32-warps"
title = "test: no 32-warp configs"
action = "disable"
match = "num_warps == 32"
reason = "a test rule"
"""


def softmax_fn(x: torch.Tensor) -> torch.Tensor:
    n, _m = x.size()
    out = torch.empty_like(x)
    for tile_n in hl.tile(n):
        out[tile_n, :] = torch.nn.functional.softmax(x[tile_n, :], dim=1)
    return out


def test_a_helion_softmax_autotuned_with_the_gate(tmp_path):
    path = tmp_path / "policies.toml"
    path.write_text(POLICY)
    gate = HelionGate(Policy.load(extra=[str(path)]))
    kernel = helion.kernel(softmax_fn, autotune_effort="quick", autotune_max_generations=2,
                           autotune_random_seed=0, **gate.settings())
    x = torch.randn(4096, 2048, device="cuda", dtype=torch.float16)
    bound, compiled = kernel.bind((x,)), []
    real = bound.compile_config
    bound.compile_config = lambda config, **kw: (compiled.append(dict(config)),
                                                 real(config, **kw))[1]
    out = kernel(x)
    torch.testing.assert_close(out, torch.softmax(x.float(), dim=1).to(x.dtype),
                               rtol=1e-2, atol=1e-3)
    c = gate.counts
    print(f"\nhelion gate on softmax: {c}; {len(compiled)} compiled")
    assert c.seen > 0 and c.excluded > 0 and c.unreadable == 0
    assert compiled and not [k for k in compiled if gate.verdict(k).status == "excluded"]
    assert c.experimental > 0 and c.checked_right + c.checked_wrong == c.experimental
    best = bound._config  # where Helion 1.5.1 keeps the tuned config (no public accessor)
    assert best is not None and gate.verdict(best).status != "excluded"
