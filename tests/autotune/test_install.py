"""No edits at all: `tunegate.install()`, `tunegate.wrap()` and `tunegate run` on an unmodified
kernel library written with stock `triton.autotune` (tests/kernels/mylib)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch
import triton

import tunegate
from tests.conftest import ROOT, run_cli

SCRIPT = textwrap.dedent("""
    import torch, triton
    import tunegate

    def main():
        tunegate.install()
        from tests.kernels.mylib import layernorm, reduce  # decorated after install()
        torch.manual_seed(0)
        x, w, b = torch.randn(4, 20), torch.randn(20), torch.randn(20)
        want = torch.nn.functional.layer_norm(x, (20,), w, b)
        print("layernorm", torch.allclose(layernorm.layer_norm(x, w, b), want, atol=1e-5),
              isinstance(layernorm.layer_norm_fwd.best_config, triton.Config))
        x = torch.randn(3, 64)
        print("row_sum", torch.allclose(reduce.row_sum(x), x.sum(1), atol=1e-4),
              reduce.row_sum_kernel.best_config in reduce.row_sum_kernel.configs)
        y = torch.randn(50)
        print("scale", torch.equal(reduce.scale_in_place(y.clone(), True), 2 * y),
              reduce.scale_in_place_kernel.fn.best_config is not None)
        tunegate.uninstall()
        print("restored", triton.runtime.autotuner.Autotuner.__module__)

    if __name__ == "__main__":
        main()
    """)


def test_install_routes_every_later_autotune_through_tunegate(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split("\n")
    assert "layernorm True True" in lines  # call-site num_ctas=1 merged, not fatal
    assert "row_sum True True" in lines  # reset_to_zero + inner @triton.heuristics
    assert "scale True True" in lines  # restore_value + outer @triton.heuristics
    assert "restored triton.runtime.autotuner" in lines


def test_wrap_an_autotuned_kernel_from_an_imported_library():
    from tests.kernels.mylib import softmax  # stock triton.autotune (not installed here)

    assert type(softmax.softmax_kernel) is triton.runtime.autotuner.Autotuner or \
        tunegate.installed()
    kernel = tunegate.wrap(softmax.softmax_kernel)
    assert kernel.configs is softmax.softmax_kernel.configs
    x = torch.randn(4, 12)
    y = torch.empty_like(x)
    kernel[(4,)](y, x, x.stride(0), y.stride(0), 4, 12, BLOCK_SIZE=16)
    assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6)
    assert kernel.best_config in softmax.softmax_kernel.configs
    assert kernel.last_result is not None and len(kernel.last_result.trials) == 2


def test_tunegate_run_script_and_module():
    done = run_cli("run", "tests/kernels/run_mylib.py", "--flag",
                   env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("matmul=True tuner=tunegate.autotune.dropin best_in_configs=True "
            "args=['--flag']") in done.stdout
    done = run_cli("run", "-m", "tests.kernels.installed_probe", "a", "b",
                   env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 3, done.stderr[-3000:]  # the module's own exit status
    assert "installed=True again=True argv=['a', 'b'] main=True" in done.stdout
    done = run_cli("run", "no_such_script.py")
    assert done.returncode == 2 and "no_such_script.py: no such file" in done.stderr
    done = run_cli("run", "-m", "no_such_pkg.mod")
    assert done.returncode == 2 and "no_such_pkg.mod: no such module" in done.stderr


def test_tunegate_run_a_folder_runs_its_main_as_python_does(tmp_path):
    import shutil

    (tmp_path / "app").mkdir()
    shutil.copy(ROOT / "tests/kernels/run_add.py", tmp_path / "app" / "__main__.py")
    done = run_cli("run", "--no-store", "app", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok True True" and "2 tuning(s)" in done.stderr
    (tmp_path / "empty").mkdir()
    done = run_cli("run", "empty", cwd=tmp_path)
    assert done.returncode == 2 and "is a folder without a __main__.py" in done.stderr


def test_interpret_without_gpu_after_kernels_were_decorated(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ.pop("TRITON_INTERPRET", None)
        import torch, triton, triton.language as tl

        @triton.jit
        def add_one(x, y, n, B: tl.constexpr):
            o = tl.program_id(0) * B + tl.arange(0, B)
            tl.store(y + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)

        import tunegate
        print("interpreted", tunegate.interpret_without_gpu())
        x, y = torch.randn(10), torch.empty(10)
        add_one[(1,)](x, y, 10, B=16)
        print("right", torch.allclose(y, x + 1))
        """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=ROOT, env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
                          timeout=300)
    if done.stdout.startswith("interpreted False"):
        return  # a GPU is usable: nothing to switch
    assert "interpreted True\nright True" in done.stdout, done.stderr[-2000:]


def test_kernel_references_by_module_name_and_autotuned_objects():
    done = run_cli("policy", "explain", "BLOCK=16, SPLIT=2, num_warps=4", "--kernel",
                   "tests.kernels.mylib.reduce:row_sum_kernel", env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "row_sum_kernel" in done.stdout and "atomics" in done.stdout


DOUBLE_MODULE = textwrap.dedent("""
    import triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": b}) for b in (16, 32, 64)], key=["n"])
    @triton.jit
    def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK != 16)  # the first config, the baseline, cannot be built
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    """)

UNGUARDED = textwrap.dedent("""
    import os
    import torch, triton
    from double_kernel import double

    with open({marker!r}, "a") as f:  # the script's top level: the program's own run only
        f.write(str(os.getpid()) + "\\n")
    x = torch.randn(100)
    y = torch.empty_like(x)
    double[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
    print("doubled", torch.equal(y, 2 * x), double.best_config.kwargs)
    """)


def test_a_worker_started_while_an_unguarded_script_runs_does_not_run_it(tmp_path):
    """`tunegate run SCRIPT` on a script without `if __name__ == "__main__"` that calls a
    library's kernel: the spare worker fails the first baseline and a new worker is started
    for the next one; multiprocessing would have it run the script's top level first, which
    tunes the kernel again inside that worker (and waited there, for spares that never come,
    until the setup timed out)."""
    marker, script = tmp_path / "ran_in", tmp_path / "prog.py"
    (tmp_path / "double_kernel.py").write_text(DOUBLE_MODULE)
    script.write_text(UNGUARDED.format(marker=str(marker)))
    done = subprocess.run([sys.executable, "-m", "tunegate", "run", str(script)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
                               "TUNEGATE_STORE": str(tmp_path / "s.sqlite")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "doubled True" in done.stdout and "'BLOCK': 16" not in done.stdout, done.stdout
    assert len(marker.read_text().split()) == 1  # no worker ran it


MAIN_REFERENCE = textwrap.dedent("""
    import torch, triton, triton.language as tl
    import tunegate

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})],
                     key=["n"])
    @triton.jit
    def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)

    def reference(x_ptr, out_ptr, n):
        return x_ptr + 1.0

    add_one = tunegate.wrap(add_one, reference=reference)

    if __name__ == "__main__":
        x, out = torch.randn(100), torch.zeros(100)
        add_one[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, out, 100)
        print("right", torch.allclose(out, x + 1))
    """)


def test_a_reference_defined_in_the_script_run_as_main_is_tuned_in_this_process(tmp_path):
    """Worker processes never run the program's script, so they cannot load a function of its
    `__main__`: such a call is tuned in the program, saying why (a worker died loading it, with
    a stray traceback on the program's stderr)."""
    script = tmp_path / "app.py"
    script.write_text(MAIN_REFERENCE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
                               "TUNEGATE_STORE": str(tmp_path / "s.sqlite")})
    assert done.returncode == 0 and "right True" in done.stdout, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


RELATIVE_KERNEL = textwrap.dedent("""
    import torch, triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 32, "LOSE": 0}),
                              triton.Config({"BLOCK": 64, "LOSE": 1})], key=["n"])
    @triton.jit
    def affine(x_ptr, y_ptr, n, BLOCK: tl.constexpr, LOSE: tl.constexpr):
        for c in range(0, tl.cdiv(n, BLOCK) - LOSE * {lose}):  # LOSE=1 skips the last chunk
            offs = c * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
    """)
CHDIR_PROGRAM = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, "lib")  # relative: after the chdir it names another folder
    import torch, kern

    if __name__ == "__main__":
        os.chdir("elsewhere")
        x, y = torch.randn(150), torch.zeros(150)
        kern.affine[(1,)](x, y, 150)
        print("right", torch.allclose(y, 2 * x))
    """)


def test_workers_that_would_import_another_file_by_the_kernel_s_module_name_are_not_used(tmp_path):
    """A relative sys.path entry and a change of working folder: workers importing `kern` by
    name found elsewhere/lib/kern.py, whose LOSE does nothing, judged LOSE=1 right, and the
    program got a wrong result."""
    for folder, lose in (("lib", 1), ("elsewhere/lib", 0)):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "kern.py").write_text(RELATIVE_KERNEL.replace("{lose}", str(lose)))
    (tmp_path / "app.py").write_text(CHDIR_PROGRAM)
    done = subprocess.run([sys.executable, "-m", "tunegate", "run", "app.py"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1",
                               "TUNEGATE_STORE": str(tmp_path / "s.sqlite")})
    assert done.returncode == 0 and "right True" in done.stdout, done.stdout + done.stderr[-3000:]


def test_the_processes_a_program_starts_are_tuned_by_tunegate_too(tmp_path):
    """Under `tunegate run`, a forked child, a "forkserver" child (which must not come from
    tunegate's own server: one hung there), a spawn pool's daemonic workers and a script run
    with `sys.executable` each tune with tunegate, leaving the wrong config out."""
    _children_tune(tmp_path, ["parent", "fork", "forkserver", "pool", "pool", "subprocess"])


@pytest.mark.gpu
def test_the_processes_a_program_starts_tune_on_the_gpu_too(tmp_path):
    """The same on the GPU, each child with a CUDA context and workers of its own."""
    _children_tune(tmp_path, ["parent", "forkserver", "pool", "pool", "subprocess"], "--cuda")


def _children_tune(tmp_path, expected: list[str], *flags: str) -> None:
    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = run_cli("run", "tests/kernels/run_children.py", *flags,
                   env={"PYTHONPATH": path, "TUNEGATE_STORE": str(tmp_path / "s.sqlite")})
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if "n=" in line]
    assert [line.split()[0] for line in lines] == expected, done.stdout
    for line in lines:
        assert line.endswith("tunegate=True right=True wrong_left_out=True"), done.stdout


def test_a_program_s_children_find_the_sitecustomize_tunegate_hides():
    """The folder `tunegate run` puts first on PYTHONPATH holds a `sitecustomize`: the one it
    hides (a distribution's, a user's) still runs, and the variables come back afterwards."""
    from tunegate.children import MARK, reaching_children

    before = {k: os.environ.get(k) for k in (MARK, "PYTHONPATH")}
    hidden = ROOT / "tests" / "data" / "hidden_site"
    with reaching_children():
        os.environ["PYTHONPATH"] += os.pathsep + str(hidden)
        done = subprocess.run([sys.executable, "-c", "import os, sys; print("
                               "os.environ.get('HIDDEN_SITECUSTOMIZE_RAN'), "
                               "'triton' in sys.modules); import triton, tunegate; "
                               "print(tunegate.installed())"],
                              capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["yes", "False", "True"], done.stderr
    assert {k: os.environ.get(k) for k in (MARK, "PYTHONPATH")} == before
