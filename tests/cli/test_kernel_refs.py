"""The one `.fn` walker and the `__main__`-guard check of tunegate.kernelfile, on real Triton
objects (`triton.autotune` over `triton.heuristics` over `@triton.jit`) and real files."""

from __future__ import annotations

import runpy
import textwrap

import pytest
import triton
import triton.language as tl

from tunegate.kernelfile import (KernelFileError, chain, importable_name, jit_function,
                                 python_function, split_reference)


def _copy(x, y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)


JIT = triton.jit(_copy)
WRAPPED = triton.autotune(configs=[triton.Config({"BLOCK": 16})], key=["n"])(
    triton.heuristics({"EVEN": lambda meta: meta["n"] % 2 == 0})(JIT))


def test_the_chain_runs_from_the_outer_wrapper_down_to_the_jit_object():
    links = chain(WRAPPED)
    assert links[0] is WRAPPED and links[-1] is JIT and len(links) == 3
    assert type(links[1]).__name__ == "Heuristics"
    assert jit_function(WRAPPED) is JIT and jit_function(JIT) is JIT
    assert python_function(WRAPPED) is _copy and python_function(JIT) is _copy


def test_a_plain_function_is_its_own_chain():
    assert chain(_copy) == [_copy] and python_function(_copy) is _copy


def test_a_chain_that_loops_or_never_ends_stops():
    class Loop:
        def __init__(self) -> None:
            self.fn = self

    class Endless:
        @property
        def fn(self) -> "Endless":
            return Endless()

    loop = Loop()
    assert chain(loop) == [loop]
    assert len(chain(Endless())) == 64


def test_split_reference_and_importable_names():
    assert split_reference("k.py:TASK") == ("k.py", "TASK")
    assert split_reference("pkg.mod:ops.kernel") == ("pkg.mod", "ops.kernel")
    assert split_reference("k.py") == ("k.py", "")
    assert split_reference("C:\\k.py") == ("C:\\k.py", "")
    import tests.kernels.mylib.matmul as lib
    assert importable_name(lib) == "tests.kernels.mylib.matmul"
    main = type(lib)("__main__")
    assert importable_name(main) is None and importable_name(None) is None


SCRIPT = """
    from tunegate.kernelfile import unguarded_line
    import sys

    def tune():
        line = unguarded_line(__file__)
        if line is not None:
            raise ValueError(f"line {line}")

    if "--top" in sys.argv:
        tune()
    if __name__ == "__main__":
        tune()
    else:
        tune()
    try:
        if "__main__" == __name__ and sys.argv:
            tune()
    finally:
        pass
"""


def test_the_unguarded_line_is_the_one_running_outside_the_main_guard(tmp_path, monkeypatch):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(SCRIPT))
    runpy.run_path(str(script), run_name="__main__")  # guarded: no error
    monkeypatch.setattr("sys.argv", ["s.py", "--top"])
    with pytest.raises(ValueError, match=r"^line 11$"):
        runpy.run_path(str(script), run_name="__main__")
    monkeypatch.setattr("sys.argv", ["s.py"])
    with pytest.raises(ValueError, match=r"^line 15$"):  # the else branch runs in workers
        runpy.run_path(str(script), run_name="not_main")


def test_a_module_reference_is_found_from_the_current_folder_by_the_console_script(tmp_path):
    """`tunegate` (the console script, whose sys.path has its own folder first) finds
    `module:NAME` in the current folder, as `python -m tunegate` does."""
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "shifted.py").write_text(
        "import triton\nimport triton.language as tl\n"
        "from tunegate.autotune import Task\n"
        "from tunegate.space import Choice, Parameter, Space\n\n"
        "@triton.jit\ndef k(x_ptr, SHIFT: tl.constexpr):\n"
        "    tl.store(x_ptr + SHIFT, 1.0)\n\n"
        "TASK = Task(name='k', kernel=k, grid=(1,), outputs=('x_ptr',),\n"
        "            space=Space(parameters={'SHIFT': Parameter(domain=Choice(choices=(0, 1), "
        "default=0))}),\n"
        "            make_inputs=lambda seed, device: {})\n")
    script = Path(sys.executable).parent / "tunegate"
    done = subprocess.run([str(script), "policy", "explain", "--no-probe", "--kernel",
                           "shifted:TASK", "SHIFT=1"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "SHIFT=1" in done.stdout


def test_a_folder_named_as_a_kernel_file_says_so(tmp_path):
    from tunegate.kernelfile import load_module

    (tmp_path / "adir.py").mkdir()
    with pytest.raises(KernelFileError, match="adir.py: is a folder, not a kernel file"):
        load_module(tmp_path / "adir.py")
