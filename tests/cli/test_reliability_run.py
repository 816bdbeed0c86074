"""`tunegate run` behaves like `python`; a kernel file's exit, hang or unusable path and a bad
TUNEGATE_DEVICES are reported in one line with the README's exit codes (issue 18)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KERNELS, ROOT

COPY = f"{KERNELS / 'pipelined_copy.py'}:TASK"


def tunegate(*argv: str, cwd: Path, env: dict[str, str] | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m tunegate ARGV` in `cwd`, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "tunegate", *argv], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, **(env or {})},
                          timeout=timeout)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The stderr of a run that must fail in one `tunegate: error:` line, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tunegate: error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


# -- item 1: `tunegate run` as `python` ------------------------------------------------------
def test_run_prints_the_message_of_sys_exit_and_exits_1(tmp_path):
    (tmp_path / "s.py").write_text("import sys\nsys.exit('the script gave up')\n")
    done = tunegate("run", "s.py", cwd=tmp_path)
    assert done.returncode == 1 and "the script gave up" in done.stderr


def test_run_reports_the_scripts_own_error_as_python_does(tmp_path):
    (tmp_path / "s.py").write_text("def f():\n    open('/no/such/input')\n\nf()\n")
    done = tunegate("run", "s.py", cwd=tmp_path)
    python = subprocess.run([sys.executable, "s.py"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert done.returncode == python.returncode == 1
    assert done.stderr == python.stderr and "tunegate" not in done.stderr


def test_run_of_a_missing_script_is_one_error_line(tmp_path):
    done = tunegate("run", "missing.py", cwd=tmp_path)
    assert done.returncode == 2 and "missing.py: no such file" in one_error_line(done)


# -- item 2: a kernel file that exits at import ----------------------------------------------
def test_a_kernel_file_that_exits_at_import_is_an_error(tmp_path):
    (tmp_path / "k.py").write_text("import sys\nsys.exit(0)\n")
    done = tunegate("tune", "k.py", "--json", cwd=tmp_path)
    assert done.returncode == 2
    assert "the kernel file exited at import (sys.exit(0))" in one_error_line(done)
    assert "sys.exit(0)" in json.loads(done.stdout)["error"]


# -- item 3: a kernel file that hangs at import ----------------------------------------------
def test_a_slow_import_is_said_on_stderr(tmp_path):
    (tmp_path / "k.py").write_text("import time\ntime.sleep(11)\n")
    done = tunegate("tune", "k.py:TASK", cwd=tmp_path)
    assert "still importing" in done.stderr and "k.py after 10 s" in done.stderr
    assert done.returncode == 2  # then: no object named TASK


# -- item 4: unusable kernel paths and TUNEGATE_DEVICES --------------------------------------
def test_a_symlink_loop_is_one_error_line(tmp_path):
    (tmp_path / "loop.py").symlink_to("loop.py")
    done = tunegate("tune", "loop.py:TASK", cwd=tmp_path)
    assert done.returncode == 2 and "loop.py" in one_error_line(done)


def test_an_over_long_kernel_path_is_one_error_line(tmp_path):
    done = tunegate("tune", "a" * 5000 + ".py:TASK", cwd=tmp_path)
    assert done.returncode == 2 and len(one_error_line(done)) < 400


@pytest.mark.parametrize("value", ["abc", "-1", "1e3", "99999999", "١٢", "9" * 5000])
def test_a_bad_devices_variable_is_one_error_line_naming_it(tmp_path, value):
    done = tunegate("tune", COPY, "--budget", "1", cwd=tmp_path,
                    env={"TUNEGATE_DEVICES": value})
    line = one_error_line(done)
    assert done.returncode == 2 and "TUNEGATE_DEVICES" in line and repr(value) in line


# -- item 5: a time budget too small to measure anything -------------------------------------
def test_a_spent_time_budget_is_blamed_not_the_policy(tmp_path):
    done = tunegate("tune", COPY, "--seconds", "1e-300", cwd=tmp_path)
    assert done.returncode == 1
    assert "the time budget (--seconds 1e-300) ran out before any config" in done.stderr
    assert "excluded" not in done.stderr


# -- a task whose make_inputs or reference misbehaves ----------------------------------------
BAD_TASK = '''
import sys
sys.path.insert(0, {root!r})
from tests.kernels.pipelined_copy import TASK
from tunegate import interpret_without_gpu

interpret_without_gpu()
RAISES = TASK.model_copy(update={{"make_inputs": lambda seed, device: 1 / 0}})
NOT_A_DICT = TASK.model_copy(update={{"make_inputs": lambda seed, device: [1, 2]}})
REFERENCE_TEXT = TASK.model_copy(update={{"reference": lambda x_ptr, y_ptr, n: "done"}})
'''


@pytest.mark.interpreter
@pytest.mark.parametrize("name, said", [("RAISES", "make_inputs raised ZeroDivisionError"),
                                        ("NOT_A_DICT", "make_inputs returned list"),
                                        ("REFERENCE_TEXT", "the reference returned str")])
def test_a_misbehaving_input_maker_or_reference_is_one_error_line(tmp_path, name, said):
    root = str(ROOT)
    (tmp_path / "bad.py").write_text(BAD_TASK.format(root=root))
    done = tunegate("tune", f"bad.py:{name}", "--store", str(tmp_path / "s.sqlite"),
                    cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    said_lines = [line for line in done.stderr.splitlines() if said in line]
    assert done.returncode == 1 and len(said_lines) == 1, done.stderr
    assert said_lines[0].startswith("tunegate: error: tuning failed: cannot check chunked_copy")


def test_run_passes_the_program_s_own_options_to_it_as_python_does(tmp_path):
    (tmp_path / "prog.py").write_text("import sys\nprint(sys.argv[1:])\n")
    for argv in (["prog.py", "--log-level=DEBUG", "-q"], ["-m", "prog", "--log-level=DEBUG"],
                 ["--no-store", "-mprog", "-h", "x"]):
        done = tunegate("run", *argv, cwd=tmp_path)
        python = subprocess.run([sys.executable, *(a for a in argv if a != "--no-store")],
                                capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout == python.stdout, (argv, done.stderr)


def test_run_starts_the_workers_before_the_program(tmp_path):
    # The server's imports and the spare's start overlap with the program's own start-up, not
    # its first tuning.
    script = tmp_path / "prog.py"
    script.write_text("import sys\n"
                      "from tunegate.autotune import warm\n"
                      "from tunegate.autotune.pool import idle_workers\n"
                      "warm.wait_for_spares()\n"
                      "print('spares', len(idle_workers()))\n"
                      "print('path', sys.path[0])\n")
    done = tunegate("run", str(script), cwd=tmp_path, env={"TUNEGATE_SPAWN": ""})
    assert done.returncode == 0, done.stderr
    assert "spares 1" in done.stdout
    assert f"path {tmp_path}" in done.stdout  # the script's folder first, as under python


_CRASHING_BASELINE = """
import torch, triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32}),
                          triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if BLOCK == 16:  # a wild pointer: the interpreter's process dies of SIGSEGV
        x = tl.load(x_ptr + offs + (1 << 40), mask=mask)
    else:
        x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x + 1, mask=mask)


if __name__ == "__main__":
    x = torch.randn(100)
    y = torch.empty(100)
    shift[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
    print("right", torch.equal(y, x + 1), shift.best_config.kwargs["BLOCK"] != 16)
"""


def test_a_baseline_config_that_crashes_its_worker_gives_way_and_the_program_lives(tmp_path):
    """The first listed config crashes the worker as it runs on draw 0: the crash is the
    config's, not the module's, so the next config is the baseline; the program is never
    made to run it in its own process (where it would die of the same segfault)."""
    (tmp_path / "p.py").write_text(_CRASHING_BASELINE)
    done = tunegate("run", "p.py", cwd=tmp_path, timeout=300,
                    env={"TUNEGATE_STORE": str(tmp_path / "s.sqlite")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "right True True" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "tuned in this process" not in done.stderr, done.stderr


def test_run_finds_modules_where_python_does(tmp_path):
    """`sys.path[0]` is the script's real folder, as under `python SCRIPT`: a symlinked script
    imports the modules beside its real file, and the current folder (the launcher's first
    entry under `python -m tunegate`) is not on the path."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "beside.py").write_text("WHERE = 'beside the real file'\n")
    (tmp_path / "real" / "main.py").write_text(
        "import beside, sys\nprint(beside.WHERE)\n"
        "try:\n    import in_cwd\nexcept ImportError:\n    print('no in_cwd')\n")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "main.py").symlink_to(tmp_path / "real" / "main.py")
    (tmp_path / "in_cwd.py").write_text("print('imported from the current folder')\n")
    for ran in (tunegate("run", "links/main.py", cwd=tmp_path),
                subprocess.run([sys.executable, "links/main.py"], capture_output=True,
                               text=True, cwd=tmp_path, timeout=60)):
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.split("\n")[:2] == ["beside the real file", "no in_cwd"], ran.stdout


def test_a_program_raising_keyboardinterrupt_ends_as_under_python(tmp_path):
    """Its traceback on stderr, and the SIGINT exit a parent process sees (-2), with no line
    of tunegate's: the program's own KeyboardInterrupt is no tunegate error."""
    script = tmp_path / "stop.py"
    script.write_text('print("x", flush=True)\nraise KeyboardInterrupt\n')
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           timeout=120)
    done = subprocess.run([sys.executable, "-m", "tunegate", "run", str(script)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (
        -signal.SIGINT, "x\n")
    assert done.stderr == plain.stderr, (done.stderr, plain.stderr)
