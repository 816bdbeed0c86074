"""A Ctrl-C at any moment of start-up ends `tunegate tune` as interrupted (exit 130), never as
a policy verdict or a traceback; `tunegate run` of an unreadable script is one error line, for
root too (issue 18).

The Ctrl-C is sent as a terminal sends it: SIGINT to the whole process group, workers included.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import KERNELS

_TASK_FILE = """
import sys, time
from pathlib import Path
sys.path.insert(0, {kernels!r})
from pipelined_copy import TASK as COPY, make_inputs

MARK = Path({mark!r})
if {at_import!r}:
    MARK.write_text("import")
    time.sleep(60)


def slow_inputs(seed, device):
    MARK.write_text("inputs")  # the worker is building its inputs: start-up is under way
    time.sleep(60)
    return make_inputs(seed, device)


TASK = COPY.model_copy(update={{"make_inputs": slow_inputs}})
"""


def _ctrl_c_when_marked(tmp_path: Path, at_import: bool) -> subprocess.CompletedProcess[str]:
    mark = tmp_path / "mark"
    (tmp_path / "k.py").write_text(_TASK_FILE.format(kernels=str(KERNELS), mark=str(mark),
                                                     at_import=at_import))
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", "tune", "k.py:TASK",
                             "--store", str(tmp_path / "s.sqlite")], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("at_import", [True, False], ids=["importing", "building-inputs"])
def test_ctrl_c_during_start_up_is_an_interrupt(tmp_path, at_import):
    done = _ctrl_c_when_marked(tmp_path, at_import)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "exclud" not in done.stderr, done.stderr
    assert done.stderr.strip().endswith("tunegate: interrupted"), done.stderr


_NO_READ_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                     "--inh-caps=-dac_override,-dac_read_search"]
"""Run a command as root without the capabilities that let root read a file of mode 000."""


def test_run_of_a_script_nobody_may_read_is_one_error_line(tmp_path):
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root reads a file of mode 000, and setpriv is not here to stop it")
        prefix = _NO_READ_OVERRIDE
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    script.chmod(0)
    done = subprocess.run([*prefix, sys.executable, "-m", "tunegate", "run", "s.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tunegate: error:")]
    assert done.returncode == 2 and len(errors) == 1 and "s.py" in errors[0], done.stderr


_HANGING_PROGRAM = """
import sys, torch, triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"MODE": 0}), triton.Config({"MODE": 1})], key=["n"])
@triton.jit
def scale(x_ptr, y_ptr, n, MODE: tl.constexpr):
    offs = tl.arange(0, 64)
    mask = offs < n
    if MODE == 1:
        i = 0
        while i >= 0:  # never ends: a hung config, measured after the first
            i += 1
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


if __name__ == "__main__":
    x = torch.randn(64)
    scale[(1,)](x, torch.empty(64), 64)
    print("the program went on", flush=True)
"""


def test_ctrl_c_while_the_drop_in_tunes_stops_the_program_and_keeps_what_was_measured(tmp_path):
    """Under `tunegate run`, a Ctrl-C once a config was measured keeps that measurement (and
    reports it), but the program stops as it was asked to (its traceback printed and the
    SIGINT exit, as under python): it does not go on with a half-tuned config."""
    import sqlite3

    (tmp_path / "p.py").write_text(_HANGING_PROGRAM)
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", "run", "p.py"], cwd=tmp_path,
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, "TUNEGATE_STORE": str(store)})
    try:
        deadline = time.monotonic() + 180
        measured = 0
        while not measured:
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
            try:
                with sqlite3.connect(store) as db:
                    measured = db.execute("SELECT count(*) FROM trials WHERE status='ok'"
                                          ).fetchone()[0]
            except sqlite3.Error:  # not made yet
                pass
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGINT, err  # as python ends: by the SIGINT
    assert "the program went on" not in out, out
    assert "Traceback" in err and "p.py\", line " in err and "TuneInterrupted" in err, err
    assert "1 tuning(s)" in err and "none: interrupted (Ctrl-C)" in err, err
    with sqlite3.connect(store) as db:  # what was measured is kept
        assert db.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()[0] >= 1


def _alive_in_session(sid: int) -> list[int]:
    """The processes of session `sid` that are not zombies."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def test_a_program_killed_while_a_config_hangs_leaves_no_process_behind(tmp_path):
    """SIGKILL to the program alone (a parent's `Popen.kill()`, a scheduler) while a worker is
    stuck in a hung config: the worker server and the worker end with it (a worker held the
    server's "alive" pipe open, so both ran on for good)."""
    import sqlite3

    (tmp_path / "p.py").write_text(_HANGING_PROGRAM)
    store = tmp_path / "s.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "tunegate", "run", "p.py"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env={**os.environ, "TUNEGATE_STORE": str(store)})
    try:
        deadline = time.monotonic() + 180
        measured = 0
        while not measured:  # the baseline measured: the hung config runs next
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
            try:
                with sqlite3.connect(store) as db:
                    measured = db.execute("SELECT count(*) FROM trials WHERE status='ok'"
                                          ).fetchone()[0]
            except sqlite3.Error:
                pass
        time.sleep(1.0)  # into the hung config
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive_in_session(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _alive_in_session(proc.pid) == []
    finally:
        for pid in _alive_in_session(proc.pid):
            os.kill(pid, signal.SIGKILL)
