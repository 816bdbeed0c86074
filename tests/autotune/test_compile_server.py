"""The compile server: compile workers forked from a server that sees no GPU and has imported
the program's modules once, instead of each worker importing them as its task arrives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.conftest import KERNELS

pytestmark = pytest.mark.interpreter  # compiles real cubins for sm_90 without a GPU

PROGRAM = """
import json, os, sys, time
from tunegate.autotune import compile_server
from tunegate.autotune.messages import Compile
from tunegate.autotune.pool import COMPILE_ENV
from tunegate.autotune.worker import TaskRef, Worker, start_server
from tunegate.space.space import Config

start_server(here=True)
assert compile_server.start(COMPILE_ENV) is None
server = compile_server._STATE.server._forkserver_pid
mode = sys.argv[2]
if mode == "gone":  # killed (a crash, say): what is sent to it is dropped
    compile_server._STATE.server.end()
if mode == "spoiled":  # an import starts a thread: it forks no more
    compile_server.preload(["tests.kernels.thread_import"])
    deadline = time.monotonic() + 60
    trace = os.environ["TUNEGATE_TRACE"]
    while not os.path.exists(trace) or "ends its service" not in open(trace).read():
        assert time.monotonic() < deadline
        time.sleep(0.05)
if mode == "stuck":  # an import that never ends: taken for stuck
    compile_server.FORK_WAIT_S = 2
    compile_server.preload(["tests.kernels.slow_import"])
compile_server.preload(["tests.kernels.marked_copy"])
ref = TaskRef(sys.argv[1], "TASK_WITH_REFERENCE", module="tests.kernels.marked_copy")
workers = [Worker(ref, seed=0, baseline_json=None, env=dict(COMPILE_ENV)) for _ in range(3)]
for w in workers:
    w.launch()
for w in workers:
    w.wait()
config = Config(values={"BLOCK": 32, "STAGES": 1})
replies = [w.request(Compile(config, "cuda:90:32", None), timeout=120) for w in workers]
parents = [int(open(f"/proc/{w.pid}/stat").read().rsplit(")", 1)[1].split()[1]) for w in workers]
print(json.dumps({"server": server, "parents": parents, "running": compile_server.running(),
                  "compiled": [r.status for r in replies], "errors": [r.error for r in replies],
                  "importers": [int(p) for p in open(os.environ["IMPORT_MARKER_FILE"]).read().split()]}))
for w in workers:
    w.close()
"""


def _run(tmp_path, mode: str, **more: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(IMPORT_MARKER_FILE=str(tmp_path / "importers"),
               TRITON_CACHE_DIR=str(tmp_path / "cache"), TUNEGATE_TRACE=str(tmp_path / "trace"),
               **more)
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(KERNELS / "marked_copy.py"), mode],
                          capture_output=True, text=True, timeout=300, env=env,
                          cwd=KERNELS.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_compile_workers_fork_from_the_server_with_its_imports(tmp_path):
    """Three compile workers, one import of the task's module (the server's), and each
    compiles for the GPU it cannot see."""
    info = _run(tmp_path, "running")
    assert info["compiled"] == ["ok"] * 3, info["errors"]
    assert info["parents"] == [info["server"]] * 3
    assert info["importers"] == [info["server"]]


@pytest.mark.parametrize("mode", ["gone", "spoiled", "stuck"])
def test_compile_workers_come_from_the_worker_server_once_the_compile_server_cannot_fork(
        tmp_path, mode):
    """Killed; an import started a thread in it (a child forked then may hang on a lock that
    thread held); stuck in an import for longer than a fork may wait."""
    started = time.monotonic()
    info = _run(tmp_path, mode, SLOW_IMPORT_S="3600")
    assert info["compiled"] == ["ok"] * 3, info["errors"]
    assert info["server"] not in info["parents"] and not info["running"]
    assert len(info["importers"]) == 3 and info["server"] not in info["importers"]
    assert time.monotonic() - started < 120


CAPPED = """
import json, sys
from tunegate.autotune import compile_server
from tunegate.autotune.pool import COMPILE_ENV, WorkerPool, compile_cores
from tunegate.autotune.worker import TaskRef, start_server

start_server(here=True)
compile_server.start(COMPILE_ENV)
compile_server.preload(["tests.kernels.slow_import"])  # the server imports for 3 s
ref = TaskRef(sys.argv[1], "TASK_WITH_REFERENCE", module="tests.kernels.marked_copy")
pools = [WorkerPool(ref, seed=0, baseline_json=None, compilers=compile_cores() + 2,
                    deterministic=True, precompile=True) for _ in range(2)]
for pool in pools:
    pool.launch()
asked = [len(pool.compilers) for pool in pools]
loaded = all(event.wait(120) for event in pools[0]._loaded.values())
print(json.dumps({"asked": asked, "cores": compile_cores(), "loaded": loaded,
                  "alive": [w.alive() for w in pools[0].compilers]}))
for pool in pools:
    pool.close()
"""


def test_pools_ask_no_more_compile_workers_than_cores_while_the_server_imports(tmp_path):
    """Two quick tunings while the compile server imports a library: the first asks for a
    compile worker per core, the second for none more; the first's start once it is done."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(IMPORT_MARKER_FILE=str(tmp_path / "importers"), SLOW_IMPORT_S="3")
    done = subprocess.run([sys.executable, "-c", CAPPED, str(KERNELS / "marked_copy.py")],
                          capture_output=True, text=True, timeout=300, env=env,
                          cwd=KERNELS.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["asked"] == [info["cores"], 0]
    assert info["loaded"] and info["alive"] == [True] * info["cores"]


QUIET = """
import time
from tunegate.autotune import compile_server
from tunegate.autotune.pool import COMPILE_ENV
from tunegate.autotune.worker import start_server

start_server(here=True)
compile_server.start(COMPILE_ENV)
compile_server.preload(["tests.kernels.noisy_import", "tests.kernels.import_marker"])
import os
deadline = time.monotonic() + 60
while not os.path.exists(os.environ["IMPORT_MARKER_FILE"]) and time.monotonic() < deadline:
    time.sleep(0.05)
print("imported" if os.path.exists(os.environ["IMPORT_MARKER_FILE"]) else "not imported")
"""


def test_what_the_server_prints_as_it_imports_is_not_the_programs_output(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(IMPORT_MARKER_FILE=str(tmp_path / "importers"))
    done = subprocess.run([sys.executable, "-c", QUIET], capture_output=True, text=True,
                          timeout=300, env=env, cwd=KERNELS.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["imported"]
    assert "noisy_import" not in done.stdout + done.stderr


HUNG = """
import time
from tunegate.autotune import compile_server
from tunegate.autotune.pool import COMPILE_ENV
from tunegate.autotune.worker import start_server

start_server(here=True)
compile_server.start(COMPILE_ENV)
compile_server.preload(["tests.kernels.slow_import"])  # its import never ends
time.sleep(0.5)
print(compile_server._STATE.server._forkserver_pid)
"""


def test_a_server_stuck_in_an_import_ends_with_the_program():
    from tests.autotune.test_server_fork import _ended

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(SLOW_IMPORT_S="3600")
    done = subprocess.run([sys.executable, "-c", HUNG], capture_output=True, text=True,
                          timeout=300, env=env, cwd=KERNELS.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    server = int(done.stdout.split()[-1])
    deadline = time.monotonic() + 30
    while not _ended(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ended(server), "the compile server outlived its program"
