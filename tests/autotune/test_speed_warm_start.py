"""A warm start (same store, fresh process) re-checks the stored best in the calling process:
no worker process is spawned; a stored best that fails that re-check is forgotten and retuned."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.kernels.double_template import write_double
from tunegate.autotune import Store, Tuner
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.policy import Policy

pytestmark = pytest.mark.interpreter

# Run in a fresh interpreter: counts the processes started, tunes, times the kernel's own
# first launch with the chosen config for comparison.
WARM = '''
import json, sys, time
import multiprocessing.process as mpp

spawned = []
start_process = mpp.BaseProcess.start
mpp.BaseProcess.start = lambda self: (spawned.append(self), start_process(self))[1]

from tunegate.autotune import Store, Tuner
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.policy import Policy
from tunegate.space import Config


def main():
    path, db = sys.argv[1], sys.argv[2]
    module = load_module(path)
    begin = time.perf_counter()
    result = Tuner(module.TASK, TaskRef(path, "TASK"), policy=Policy([]), store=Store(db)).run()
    tuned = time.perf_counter() - begin
    args = module.make_inputs(7, "cpu")
    begin = time.perf_counter()
    module.TASK.run(args, Config(values=result.best))
    launch = time.perf_counter() - begin
    print(json.dumps({"reused": result.reused, "spawned": len(spawned), "tuned": tuned,
                      "launch": launch, "notes": result.notes}))


if __name__ == "__main__":  # spawned workers import this file
    main()
'''


def test_a_warm_start_in_a_fresh_process_spawns_no_worker(tmp_path):
    path = write_double(tmp_path, size=200, high=64)
    store = Store(tmp_path / "s.sqlite")
    cold = Tuner(load_module(path).TASK, TaskRef(str(path), "TASK"), policy=Policy([]),
                 store=store).run()
    assert not cold.reused and cold.startup_seconds > 0 and cold.timing_seconds > 0
    assert cold.startup_seconds + cold.timing_seconds <= cold.wall_seconds
    script = tmp_path / "warm.py"
    script.write_text(WARM)
    done = subprocess.run([sys.executable, str(script), str(path), str(tmp_path / "s.sqlite")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    warm = json.loads(done.stdout.strip().splitlines()[-1])
    assert warm["reused"] and warm["spawned"] == 0, warm
    assert any("re-checked on a fresh draw" in n for n in warm["notes"])
    # No process start (seconds); what is left is loading the policy, store and one check.
    assert warm["tuned"] - warm["launch"] < 2.0, warm


def test_a_stored_best_that_fails_the_in_process_recheck_is_retuned(tmp_path):
    path = write_double(tmp_path, size=200, high=64)
    store = Store(tmp_path / "s.sqlite")
    module = load_module(path)
    cold = Tuner(module.TASK, TaskRef(str(path), "TASK"), policy=Policy([]), store=store).run()
    # The same task (same fingerprint), but its kernel now writes wrong output in this
    # process only: the isolated workers load the file, which is unchanged.
    task = module.TASK
    run = task.run
    object.__setattr__(task, "run", lambda args, config: (run(args, config),
                                                          args["y_ptr"].add_(1))[0])
    again = Tuner(task, TaskRef(str(path), "TASK"), policy=Policy([]), store=store).run()
    assert not again.reused and again.best is not None and cold.best is not None
    assert any("failed its re-check on a fresh draw" in n for n in again.notes)
    assert sum(t.config == cold.best for t in again.trials) == 1  # its re-check, not also a skip
