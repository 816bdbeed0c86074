"""`tunegate run` says what it tuned (one row per tuning on stderr, nothing when nothing was
tuned) and stops a script that tunes from its top level with one line saying what to do."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import KERNELS

SCRIPT = str(KERNELS / "run_add.py")


def tunegate_run(*argv: str, cwd, env=None, before=()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tunegate", "run", *before, SCRIPT, *argv],
                          capture_output=True, text=True, cwd=cwd, timeout=300, env=env)


def _rows(done: subprocess.CompletedProcess[str]) -> list[str]:
    lines = done.stderr.splitlines()
    return lines[lines.index("tunegate: 2 tuning(s)") + 3:]


def test_a_second_run_reuses_what_the_first_tuned_unless_told_not_to(tmp_path):
    # no TUNEGATE_STORE: the default store, in this test's own cache folder
    env = {k: v for k, v in os.environ.items() if k != "TUNEGATE_STORE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    first = tunegate_run(cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert not any(" reused " in r for r in _rows(first))
    second = tunegate_run(cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert all(" reused " in r for r in _rows(second)), second.stderr
    assert not any("all kept" in r for r in _rows(second))  # no verdicts of its own
    winners = [[r.split("  ")[2] for r in _rows(done)] for done in (first, second)]
    assert winners[0] == winners[1]  # a reused winner reads as it did (its fields in order)
    (tmp_path / "tmp").mkdir()
    fresh = tunegate_run(cwd=tmp_path, env={**env, "TMPDIR": str(tmp_path / "tmp")},
                         before=("--no-store",))
    assert fresh.returncode == 0, fresh.stderr
    assert not any(" reused " in r for r in _rows(fresh)), fresh.stderr
    assert not list((tmp_path / "tmp").glob("tunegate-run-*"))  # its store went with it


def test_run_ends_with_one_row_per_tuning_on_stderr(tmp_path):
    done = tunegate_run(cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok True True"  # the table never reaches stdout
    lines = done.stderr.splitlines()
    start = lines.index("tunegate: 2 tuning(s)")
    header, rule, *rows = lines[start + 1:]
    assert header.split() == ["kernel", "key", "winner", "time", "tuning", "configs"]
    assert set(rule) <= {"-", " "}
    assert [r.split()[0] for r in rows] == ["add_kernel", "add_kernel"]
    assert "n=64," in rows[0] and "n=48," in rows[1]
    assert all("BLOCK=" in r and " ms " in r and "2 (all kept)" in r for r in rows)


@pytest.mark.gpu
def test_run_on_a_gpu_ends_with_gpu_timed_rows(tmp_path):
    done = tunegate_run("--cuda", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok True True"
    rows = [line for line in done.stderr.splitlines() if line.startswith("add_kernel")]
    assert len(rows) == 2 and all(" ms " in r and "2 (all kept)" in r for r in rows), rows
    # the kept worker gave back the program's GPU memory it had opened (CUDA IPC) when its
    # tasks were unloaded, before the program ended
    assert "shared CUDA tensors" not in done.stderr, done.stderr


def test_run_prints_no_table_when_nothing_was_tuned(tmp_path):
    done = tunegate_run("--no-launch", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_a_script_tuning_from_its_top_level_runs_tuned_in_the_program_s_process(tmp_path):
    """As under python: workers would run its top level again, so it is tuned in the
    program's own process (an INFO line says why)."""
    done = tunegate_run("--top-level", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "ok True True\n", done.stderr
    assert "tunegate: 2 tuning(s)" in done.stderr, done.stderr


def test_a_failed_tuning_says_how_to_give_a_library_kernel_a_reference(tmp_path):
    done = tunegate_run("--wrong-baseline", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("tunegate: error:")]
    assert "the baseline config looks wrong" in error
    assert "tunegate.wrap(lib.double_kernel, reference=fn)" in error
    assert "rule in your policies.toml" in error and "give the task" not in error
    row = next(line for line in done.stderr.splitlines() if line.startswith("double_kernel"))
    assert "none: the baseline config looks wrong " in row and "4 (3 rejected)" in row


WRONG_VARIANT = '''
import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"VARIANT": v}) for v in range(3)], key=["n"])
@triton.jit
def double_it(x, y, n, VARIANT: tl.constexpr):
    offs = tl.arange(0, 64)
    factor = 3 if VARIANT == 1 else 2  # VARIANT=1 is wrong
    tl.store(y + offs, factor * tl.load(x + offs, mask=offs < n), mask=offs < n)


if __name__ == "__main__":
    x, y = torch.randn(50), torch.empty(50)
    double_it[(1,)](x, y, 50)
    print(torch.equal(y, 2 * x))
'''


def test_explain_after_a_run_reports_what_the_drop_in_found_of_the_kernel_s_calls(tmp_path):
    (tmp_path / "prog.py").write_text(WRONG_VARIANT)
    env = {**os.environ, "TUNEGATE_STORE": str(tmp_path / "s.sqlite")}
    done = subprocess.run([sys.executable, "-m", "tunegate", "run", "prog.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr
    explained = subprocess.run([sys.executable, "-m", "tunegate", "policy", "explain",
                                "VARIANT=1", "--kernel", "prog.py:double_it", "--store",
                                str(tmp_path / "s.sqlite")], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
    assert explained.returncode == 0, explained.stderr
    assert "REJECTED by tuning" in explained.stdout
    assert "an earlier version" not in explained.stdout  # the calls are the kernel's tasks
