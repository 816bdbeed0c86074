"""tunegate's own threads leave a Ctrl-C to the main thread (`tunegate._threads`)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

from tunegate._threads import Watch, start


def _blocks_sigint() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_a_tunegate_thread_blocks_sigint_and_the_main_thread_does_not():
    seen: list[bool] = []
    start(lambda: seen.append(_blocks_sigint()), name="tunegate-test").join()
    assert seen == [True]
    assert not _blocks_sigint()


def test_a_watch_runs_once_its_time_is_up_in_such_a_thread_unless_cancelled():
    fired = threading.Event()
    blocked: list[bool] = []
    Watch(0.05, lambda: (blocked.append(_blocks_sigint()), fired.set()), name="tunegate-test")
    assert fired.wait(5) and blocked == [True]
    cancelled = threading.Event()
    watch = Watch(0.2, cancelled.set, name="tunegate-test")
    watch.cancel()
    time.sleep(0.4)
    assert not cancelled.is_set()


_SLEEPER = """
import sys, time
from tunegate._threads import Watch
watch = Watch(60, lambda: None, name="tunegate-test")  # a thread of ours, alive
try:
    print("sleeping", flush=True)
    time.sleep(60)  # as a kernel file's import that waits
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_a_ctrl_c_wakes_a_main_thread_asleep_beside_a_tunegate_thread():
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", _SLEEPER], stdout=subprocess.PIPE,
                                text=True)
        try:
            assert proc.stdout.readline() == "sleeping\n"
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=20)
        finally:
            proc.kill()
        assert out == "interrupted\n"
