"""The worker server forked from the program at the command line's start: it serves workers,
ends with the program however the program ends, and is not forked where that is unsafe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import KERNELS
from tunegate.autotune.server_fork import forkable

pytestmark = pytest.mark.interpreter

PROGRAM = """
import json, os, sys
from tunegate.autotune import worker_server
from tunegate.autotune import warm
from tunegate.autotune.pool import WorkerPool
from tunegate.autotune.worker import TaskRef

warm.warm_up(here=True)
server = worker_server.server()._forkserver_pid
same_command = open(f"/proc/{server}/cmdline", "rb").read() == open("/proc/self/cmdline", "rb").read()
warm.wait_for_spares()
pool = WorkerPool(TaskRef(sys.argv[1], "TASK_WITH_REFERENCE"), seed=0, baseline_json=None,
                  compilers=0, deterministic=True)
pool.start_first()
print(json.dumps({"server": server, "forked": same_command, "spare_taken": pool.reused,
                  "loaded": bool(pool.run.problem_key)}), flush=True)
os._exit(0)  # no clean-up at all: the server must still end
"""


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie has ended
    except FileNotFoundError:
        return True


def test_a_server_forked_from_the_program_serves_its_workers_and_ends_with_it():
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(KERNELS / "pipelined_copy.py")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TUNEGATE_WARM": "1"})
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info == {**info, "forked": True, "spare_taken": 1, "loaded": True}, info
    deadline = time.monotonic() + 30
    while not _ended(info["server"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ended(info["server"]), "the forked server outlived its program"


def test_no_fork_beside_another_thread():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert forkable() == "other Python threads are running"
    finally:
        stop.set()
        other.join()


def test_starting_a_worker_never_changes_this_processs_environment():
    """A compile worker sees no GPU (CUDA_VISIBLE_DEVICES=""), set by the worker itself: this
    process's threads, probing the device while it starts, must never see that value."""
    from tunegate.autotune.pool import COMPILE_ENV
    from tunegate.autotune.worker import Worker

    seen: set[tuple[str | None, str | None]] = set()
    workers: list[Worker] = []

    def start() -> None:
        workers.extend(Worker.spare(dict(COMPILE_ENV)) for _ in range(3))

    starter = threading.Thread(target=start)
    starter.start()
    while starter.is_alive():
        seen.add((os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("TUNEGATE_COMPILE_ONLY")))
    starter.join()
    try:
        assert seen == {(os.environ.get("CUDA_VISIBLE_DEVICES"), None)}
        assert all(w.alive() for w in workers)
    finally:
        for w in workers:
            w.close()


@pytest.mark.parametrize("here", [True, False])
def test_a_worker_whose_program_is_gone_before_its_task_ends_without_a_traceback(here):
    """A program that fails at once while spare workers start leaves no traceback of theirs
    on its terminal (the worker reads end-of-file where its task should be)."""
    program = f"""
import os, time
from tunegate.autotune import worker_server
from tunegate.autotune.worker import start_server
start_server(here={here})
_, to_child = worker_server.server().connect_to_new_process([])
os.close(to_child)  # gone before sending anything
time.sleep(1.5)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_spares_import_an_autotuners_module_ahead_of_its_first_tuning(tmp_path):
    """`warm.preload` (the drop-in calls it for each autotuner a program defines): the spare
    workers import the module while the program goes on; the program's own import is its own."""
    marker = tmp_path / "imported_by"
    program = """
import os, sys, time
from tunegate.autotune import warm
warm.warm_up()
warm.preload("tests.kernels.import_marker", "__main__", None)
warm.wait_for_spares()
deadline = time.monotonic() + 60
while time.monotonic() < deadline and not os.path.exists(os.environ["IMPORT_MARKER_FILE"]):
    time.sleep(0.05)
print(os.getpid())
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300, cwd=KERNELS.parent.parent,
                          env={**os.environ, "IMPORT_MARKER_FILE": str(marker)})
    assert done.returncode == 0, done.stderr
    program_pid = done.stdout.split()[-1]
    importers = marker.read_text().split()
    assert importers and program_pid not in importers  # a spare imported it, the program not


@pytest.mark.parametrize("here", [True, False])
def test_a_worker_ignores_ctrl_c_from_its_first_instruction(here):
    """A terminal's Ctrl-C reaches the whole process group, workers included, at any moment of
    their start: it is the program's to handle, never a worker's traceback."""
    program = f"""
import os, signal, time
from tunegate.autotune.worker import Worker, start_server
start_server(here={here})
worker = Worker.spare({{}})
end = time.monotonic() + 1.0
while time.monotonic() < end:
    os.kill(worker.pid, signal.SIGINT)
print("alive" if worker.alive() else "dead", flush=True)
print(worker.stderr_tail(), flush=True)
worker.close()
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("alive") and "Traceback" not in done.stdout + done.stderr, \
        done.stdout + done.stderr


def test_the_forked_server_ends_without_a_traceback_when_the_program_goes_mid_request():
    """The program ends between connecting to the server and saying which worker it wants
    (it ended while spare workers started): no traceback of the server's on its terminal."""
    program = """
import socket, time
from tunegate.autotune import worker_server
from tunegate.autotune.worker import start_server
start_server(here=True)
with socket.socket(socket.AF_UNIX) as s:
    s.connect(worker_server.server()._forkserver_address)  # and gone before sending anything
time.sleep(1.5)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_the_preload_imports_what_a_first_launch_would_import_lazily():
    """Workers forked from the server find what Triton imports only at a process's first
    launch or compile (its gluon package, in Triton 3.6 and later) imported already."""
    script = ("import importlib.util, sys\n"
              "import tunegate.autotune.server_preload as p\n"
              "print(all(m in sys.modules for m in p.LAZY_TRITON_MODULES\n"
              "          if importlib.util.find_spec(m) is not None))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "True", out.stderr
