"""CPU measurement of tunegate's fixed costs: process wall, worker start, a cold tune and a warm
start of examples/tutorial_softmax.py's small task, and several tasks tuned in one process.

Run: PYTHONPATH=$PWD python benchmarks/cpu_overhead.py [--devices N]. Interpreter timings are
not GPU timings; start-up, process and scheduling costs are real.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=None)
    args = parser.parse_args()
    from examples import tutorial_softmax
    from tunegate.autotune.api import task_ref
    from tunegate.autotune.store import Store
    from tunegate.autotune.tuner import Tuner
    from tunegate.policy import Policy

    imported = time.perf_counter() - T0
    options = {} if args.devices is None else {"devices": args.devices}
    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "store.db")
        policy = Policy.load()
        t = time.perf_counter()
        cold = Tuner(tutorial_softmax.TASK, task_ref(tutorial_softmax.TASK), policy=policy,
                     store=store, **options).run()
        cold_s = time.perf_counter() - t
        t = time.perf_counter()
        warm = Tuner(tutorial_softmax.TASK, task_ref(tutorial_softmax.TASK), policy=policy,
                     store=store, **options).run()
        warm_s = time.perf_counter() - t
        t = time.perf_counter()
        tuner = Tuner(tutorial_softmax.TASK, task_ref(tutorial_softmax.TASK), policy=policy,
                      store=store, **options)
        init_s = time.perf_counter() - t
        tuner.run()
        again_s = time.perf_counter() - t
    print(json.dumps({
        "import_s": round(imported, 3), "cold_tune_s": round(cold_s, 3),
        "cold_trials": len(cold.trials), "cold_best": dict(cold.best or {}),
        "warm_start_s": round(warm_s, 3), "warm_reused": warm.reused,
        "second_warm_start_s": round(again_s, 3), "of_which_tuner_init_s": round(init_s, 3),
        "process_wall_s": round(time.perf_counter() - T0, 3)}, indent=1))


if __name__ == "__main__":
    main()
