import subprocess
import sys

import pytest

from tunegate.policy import (Environment, InvalidEnvironment, TraitError, detect_environment,
                             detect_traits)

SOURCE = '''
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(n):
        for j in tl.range(0, i):
            tl.store(y_ptr + offs, s)
            s += tl.load(y_ptr + offs)
        a = tl.load(x_ptr + offs)
        s += tl.sum(a, axis=0)
        acc = tl.dot(tl.trans(a), a, acc)
        acc = tl.dot(a, a, acc)
    tl.atomic_add(acc_ptr + offs, s)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * 2)
'''


def test_import_policy_does_not_import_torch_or_triton():
    code = ("import sys, tunegate, tunegate.policy, tunegate.space, tunegate.cli\n"
            "print('torch' in sys.modules, 'triton' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_versions_come_from_metadata_and_overrides_win():
    env = detect_environment()
    assert env.python and env.torch and env.triton and env.device is None
    what_if = env.with_overrides({"triton": "3.9.0", "device": "cuda", "capability": "9.0"})
    assert what_if.triton == "3.9.0" and what_if.device == "cuda"
    assert set(what_if.overridden) == {"triton", "device", "capability"}
    assert what_if.fingerprint() != env.fingerprint()


@pytest.mark.parametrize("bad, needle", [
    ({"trition": "3.6"}, "unknown environment fact 'trition'"),
    ({"device": "tpu"}, "device"),
    ({"triton": "three"}, "not a version"),
])
def test_bad_overrides_are_clear_errors(bad, needle):
    with pytest.raises(InvalidEnvironment, match=needle):
        Environment().with_overrides(bad)


def test_traits_from_source():
    traits = detect_traits(source=SOURCE, name="k")
    assert traits.traits == {"store_then_load", "in_place", "atomics", "dot", "multi_dot",
                             "dot_trans_and_sum", "chained_dot_acc", "nested_dynamic_range"}
    assert traits.evidence["store_then_load"].startswith("line 13:")


def test_traits_of_real_example_kernels():
    from examples import splitk, store_load

    assert detect_traits(store_load.store_then_load).traits == {"store_then_load", "in_place"}
    assert detect_traits(splitk.splitk_matmul).traits == {"atomics", "dot"}


def test_load_then_store_is_not_store_then_load():
    src = ("def k(p, n):\n    for i in range(n):\n        x = tl.load(p + i)\n"
           "        tl.store(p + i, x)\n")
    assert "store_then_load" not in detect_traits(source=src).traits


def test_missing_function_is_an_error():
    with pytest.raises(TraitError, match="no function 'nope'"):
        detect_traits(source=SOURCE, name="nope")
