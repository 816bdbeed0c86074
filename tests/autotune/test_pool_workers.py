"""The worker pool: workers reused across runs, N simulated devices, lifecycle and set-up limits.

Real kernels under the interpreter, in real worker processes; the task files are written here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from tests.conftest import KERNELS
from tests.kernels.double_template import write_double
from tunegate.autotune import Store, Tuner
from tunegate.autotune.pool import close_idle_workers, idle_workers
from tunegate.autotune.tuner import TuneError
from tunegate.autotune.worker import TaskRef, file_stamp
from tunegate.kernelfile import load_module
from tunegate.policy import Policy

pytestmark = pytest.mark.interpreter


def write(folder, sleep=0.0):
    """The double template with BLOCK 32 wrong; make_inputs sleeps `sleep` seconds."""
    return write_double(folder, wrong_block=32, sleep=sleep)


def tune(path, store, **options):
    return Tuner(load_module(path).TASK, TaskRef(str(path), "TASK"), policy=Policy([]),
                 store=store, **options).run()


def test_workers_are_reused_across_runs_and_a_warm_start_starts_none(tmp_path):
    close_idle_workers()
    path, store = write(tmp_path), Store(tmp_path / "s.sqlite")
    cold = tune(path, store, devices=2)
    kept = idle_workers()
    assert len(kept) == 2 and not cold.reused
    pids = {w.pid for w in kept}
    warm = tune(path, store, devices=2, retune=True)  # a search again: both workers, no new one
    assert {w.pid for w in idle_workers()} == pids and not warm.reused
    close_idle_workers()
    reused = tune(path, store, devices=2)  # a fresh process's view: nothing kept
    assert reused.reused and [b.config for b in store.bests()] == [reused.best]  # the faster
    # of the two runs' bests, as the store keeps it (interpreter timings are noisy)
    assert any("re-checked on a fresh draw" in n for n in reused.notes)
    assert not idle_workers()  # the re-check ran in this process: no worker was started
    close_idle_workers()


def test_a_kept_worker_killed_while_idle_is_replaced_not_a_closed_pipe(tmp_path, monkeypatch):
    """Killed while kept (the OOM killer, a scheduler) just after it passed the liveness check
    (that window is held open here), a worker's pipe is closed: the next tuning starts another
    instead of raising BrokenPipeError (read by the CLI as its own stdout closed: exit 141,
    results unprinted)."""
    import signal

    from tunegate.autotune.worker import Worker

    close_idle_workers()
    path, store = write(tmp_path), Store(tmp_path / "s.sqlite")
    tune(path, store)
    [kept] = idle_workers()
    os.kill(kept.pid, signal.SIGKILL)
    kept._proc.join(10)
    monkeypatch.setattr(Worker, "alive", lambda self: self._proc is not None)
    again = tune(path, store, retune=True)
    assert again.best is not None and kept.pid not in {w.pid for w in idle_workers()}
    close_idle_workers()


def _pids_that_loaded(path) -> set[int]:
    """The kept workers that imported `path` as it is now."""
    return {w.pid for w in idle_workers() if w.loaded.get(str(path)) == file_stamp(str(path))}


def test_workers_are_kept_across_files_but_not_for_a_changed_file_or_another_folder(tmp_path):
    close_idle_workers()
    store = Store(tmp_path / "s.sqlite")
    first = write(tmp_path)
    tune(first, store)
    pids = {w.pid for w in idle_workers()}
    second = tmp_path / "other.py"  # another kernel file of the same folder: the same worker
    second.write_text(first.read_text())
    tune(second, store, retune=True)
    assert {w.pid for w in idle_workers()} == pids
    time.sleep(0.01)
    first.write_text(first.read_text() + "\n# changed\n")  # imported before, now changed
    tune(first, store, retune=True)
    changed = _pids_that_loaded(first)
    assert changed and not changed & pids
    (tmp_path / "sub").mkdir()
    elsewhere = write(tmp_path / "sub")  # another folder: its sibling imports are its own
    tune(elsewhere, store, retune=True)
    assert _pids_that_loaded(elsewhere) and not _pids_that_loaded(elsewhere) & (pids | changed)
    close_idle_workers()


def test_simulated_devices_record_every_trial_once_with_the_same_answer(tmp_path):
    close_idle_workers()
    path = write(tmp_path)
    one = tune(path, Store(tmp_path / "one.sqlite"), devices=1)
    three = tune(path, Store(tmp_path / "three.sqlite"), devices=3)
    close_idle_workers()
    for result in (one, three):
        keys = [tuple(sorted(t.config.items())) for t in result.trials]
        assert len(keys) == len(set(keys)) == 4  # BLOCK 16, 32, 64, 128: each exactly once
    assert {t.config["BLOCK"]: t.status for t in one.trials} == \
        {t.config["BLOCK"]: t.status for t in three.trials} == \
        {16: "ok", 32: "wrong", 64: "ok", 128: "ok"}
    for result in (one, three):
        fastest = min((t for t in result.trials if t.status == "ok"), key=lambda t: t.time_ms)
        assert result.best == fastest.config
    with Store(tmp_path / "three.sqlite")._read() as db:
        rows = db.execute("SELECT config FROM trials").fetchall()
    assert len(rows) == len({r["config"] for r in rows}) == 4


def test_setup_obeys_the_per_config_timeout(tmp_path):
    close_idle_workers()
    path = write(tmp_path, sleep=30.0)
    start = time.perf_counter()
    with pytest.raises(TuneError, match="did not load the task within 3 s"):
        tune(path, Store(tmp_path / "s.sqlite"), timeout=3)
    assert time.perf_counter() - start < 20


def test_workers_die_with_their_parent(tmp_path):
    path = write(tmp_path)
    script = textwrap.dedent(f'''
        import os, signal, sys
        from tunegate.autotune.pool import WorkerPool
        from tunegate.autotune.worker import TaskRef
        pool = WorkerPool(TaskRef({str(path)!r}, "TASK"), seed=0, baseline_json=None,
                          compilers=0, deterministic=True, devices=2)
        pool.start()
        print(" ".join(str(w.pid) for w in pool.runs), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no cleanup: only the kernel can help
    ''')
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_kept_worker_takes_the_variables_it_reads_at_work_from_each_task(tmp_path,
                                                                         monkeypatch):
    """A library that sets TORCHINDUCTOR_CACHE_DIR at import (Liger-Kernel's do) no longer
    leaves every kept worker unusable: the worker takes the new value with its task. A
    variable read as a worker starts (torch's allocator switch) still needs a new worker."""
    from tunegate.autotune.pool import WorkerPool

    close_idle_workers()
    marker = tmp_path / "seen"
    monkeypatch.setenv("ENV_MARKER_FILE", str(marker))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)

    def run_worker_pid():
        pool = WorkerPool(TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_NOTING_ENVIRONMENT"),
                          seed=0, baseline_json=None, compilers=0, deterministic=True)
        try:
            pool.start()
            return pool.run.pid
        finally:
            pool.close()

    try:
        first = run_worker_pid()
        monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
        assert run_worker_pid() == first
        monkeypatch.setenv("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")
        assert run_worker_pid() != first
    finally:
        close_idle_workers()
    seen = [line.split() for line in marker.read_text().splitlines()]
    assert seen[0] == [str(first), "None"] and seen[1] == [str(first), str(tmp_path / "inductor")]


SEGFAULTING = '''\
import os
import signal

import triton

from tunegate.autotune import Task
from tunegate.space import Choice, Parameter, Space

from tests.kernels import trust


def launch(args, config):
    if config.values["MODE"] == 1:
        os.kill(os.getpid(), signal.SIGSEGV)  # what a wild pointer does on a GPU host
    trust.double[(1,)](args["x_ptr"], args["y_ptr"], args["n"], BLOCK=256, VARIANT=1)


TASK = trust.INTERMITTENT.model_copy(update={
    "name": "segfaulting", "launch": launch,
    "space": Space(parameters={"MODE": Parameter(domain=Choice(choices=(0, 1), default=0))})})
'''


def test_a_worker_killed_by_a_signal_says_which(tmp_path):
    path = tmp_path / "segfaulting.py"
    path.write_text(SEGFAULTING)
    result = tune(path, Store(tmp_path / "s.sqlite"))
    crashed = next(t for t in result.trials if t.config.values["MODE"] == 1)
    assert crashed.status == "crashed" and "killed by SIGSEGV" in crashed.reason.summary, \
        crashed.reason
    assert result.best.values == {"MODE": 0}


@pytest.mark.parametrize("option, value", [("timeout", float("nan")), ("timeout", float("inf")),
                                           ("timeout", -1), ("draws", 0), ("devices", 0)])
def test_option_values_the_cli_refuses_are_refused_before_any_worker_starts(tmp_path, option,
                                                                            value):
    from tunegate.errors import UsageError

    with pytest.raises(UsageError, match=f"{option} must be"):
        tune(write(tmp_path), Store(tmp_path / "s.sqlite"), **{option: value})


SLOW = SEGFAULTING.replace('''    if config.values["MODE"] == 1:
        os.kill(os.getpid(), signal.SIGSEGV)  # what a wild pointer does on a GPU host''',
                           '''    import time
    time.sleep(5)  # every config: no measurement ends before the Ctrl-C''').replace(
    '"name": "segfaulting"', '"name": "slow"')


def test_ctrl_c_before_any_config_is_measured_is_an_interrupt_not_an_empty_list(tmp_path):
    """A Ctrl-C once the search has started, but before a config was measured, ended in "every
    candidate config is excluded here (the candidate list is empty)": exit 1, not 130."""
    import signal
    import threading

    path = tmp_path / "slow.py"
    path.write_text(SLOW)
    main = threading.get_ident()

    def progress(event):
        if event.get("event") == "start":  # the search's: interrupt its first measurement
            threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        Tuner(load_module(path).TASK, TaskRef(str(path), "TASK"), policy=Policy([]),
              store=Store(tmp_path / "s.sqlite"), progress=progress).run()
