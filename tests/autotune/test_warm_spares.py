"""Spare workers started before the first tuning (`warm_up`): a pool takes them, they import
the task from where the program looks at tuning time, and commands that never tune start none.

Each case runs in a fresh process (warming happens once per process), on real workers and a
real kernel under the interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.kernels.double_template import write_double

pytestmark = pytest.mark.interpreter

ROOT = Path(__file__).resolve().parents[2]


def python(code: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1", **env}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=cwd, env=environ, timeout=240)


def test_the_first_tuning_takes_the_spare_which_imports_from_the_path_of_that_time(tmp_path):
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    write_double(kernels, wrong_block=32).rename(kernels / "spare_kernel.py")
    done = python(f"""
        import sys
        from tunegate.autotune import Store, Tuner, warm
        from tunegate.autotune.pool import idle_workers
        from tunegate.autotune.worker import TaskRef
        from tunegate.policy import Policy

        warm.warm_up()
        warm.wait_for_spares()
        spares = [w.pid for w in idle_workers()]
        print("spares", len(spares))
        sys.path.insert(0, {str(kernels)!r})  # after the spare started: the program's own path
        import spare_kernel
        result = Tuner(spare_kernel.TASK, TaskRef(spare_kernel.__file__, "TASK",
                                                  module="spare_kernel"),
                       policy=Policy([]), store=Store({str(tmp_path / 's.sqlite')!r})).run()
        print("best", result.best.values["BLOCK"], "wrong", result.trials[0].status.value
              if result.trials else None)
        print("same process", [w.pid for w in idle_workers()] == spares)
        """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "spares 1" in done.stdout  # the run worker; compile workers only on a GPU host
    assert "same process True" in done.stdout, done.stdout
    assert "best 32" not in done.stdout  # the wrong config was caught in the spare too


@pytest.mark.parametrize("how", ["forbid", "TUNEGATE_WARM=0", "a tunegate run child"])
def test_no_spare_is_started_where_nothing_tunes(tmp_path, how):
    """Nor in each process a program under `tunegate run` starts (a pool of them would each
    start spares, tuning or not)."""
    env = {"forbid": {}, "TUNEGATE_WARM=0": {"TUNEGATE_WARM": "0"},
           "a tunegate run child": {"TUNEGATE_RUN_CHILDREN": "1"}}[how]
    done = python(f"""
        from tunegate.autotune import warm
        from tunegate.autotune.pool import idle_workers

        if {how == "forbid"}:
            warm.forbid()
        warm.warm_up()
        warm.wait_for_spares()
        print("spares", len(idle_workers()))
        """, tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert "spares 0" in done.stdout


def test_a_spare_started_while_a_script_runs_does_not_run_the_script(tmp_path):
    """`tunegate run SCRIPT` warms while the script runs as `__main__`; multiprocessing would
    have a new process run that script's top level first, side effects and all."""
    marker = tmp_path / "ran_in"
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(f"""
        import os
        from pathlib import Path
        with Path({str(marker)!r}).open("a") as f:
            f.write(str(os.getpid()) + "\\n")
        if __name__ == "__main__":
            from tunegate.autotune import warm
            from tunegate.autotune.pool import idle_workers

            warm.warm_up()
            warm.wait_for_spares()
            print("spares", len(idle_workers()), [w.alive() for w in idle_workers()])
        """))
    done = python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
                  tmp_path)
    assert done.returncode == 0, done.stderr
    assert "spares 1 [True]" in done.stdout, done.stdout
    assert len(marker.read_text().split()) == 1  # the program's own run, no worker's


def test_the_programs_own_processes_still_run_its_main_module(tmp_path):
    """Only tunegate's workers start without the program's main module: a process the
    program starts itself (spawn) still finds the script's functions there."""
    script = tmp_path / "own_pool.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import tunegate.autotune.worker  # noqa: F401 - what patches multiprocessing

        def square(x):
            return x * x

        if __name__ == "__main__":
            with mp.get_context("spawn").Pool(1) as pool:
                print("squares", pool.map(square, [2, 3]))
        """))
    done = python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')",
                  tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "squares [4, 9]" in done.stdout
