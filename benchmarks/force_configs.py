"""Run a library's own tests once per config of one of its autotuned kernels: which configs are
right by the library's own check (issue 17: a shipped rule must remove no config that is).

    python benchmarks/force_configs.py --kernel chunk_bwd_kernel_dqke --repeat 20 \\
        --json out.json -- tests/ops/test_ttt.py::test_chunk[...]

Run from the library's test folder. The tests run in this process (`pytest.main`), once
unforced, then `--repeat` times for each config of each named kernel: that kernel's autotuner
is given the one config (a single-config autotuner launches it without tuning), every other
kernel tunes as usual. A config is right if every repeat passed.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from typing import Any

import pytest


def autotuners(name: str) -> list[Any]:
    """Every live `triton.autotune` object whose kernel is called `name`."""
    from triton.runtime.autotuner import Autotuner

    found = []
    for obj in gc.get_objects():
        if isinstance(obj, Autotuner):
            fn = getattr(obj, "base_fn", None) or getattr(obj, "fn", None)
            if getattr(fn, "__name__", None) == name:
                found.append(obj)
    return found


def config_text(config: Any) -> str:
    from tunegate.autotune.task import triton_config_values

    return ", ".join(f"{k}={v}" for k, v in triton_config_values(config).items()
                     if v is not None)


class Outcomes:
    """A pytest plugin counting passed and failed test calls."""

    def __init__(self) -> None:
        self.passed = self.failed = 0
        self.first_failure = ""

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when == "call" and report.passed:
            self.passed += 1
        elif report.failed:
            self.failed += 1
            self.first_failure = self.first_failure or str(report.longrepr)[-600:]


def run_tests(args: list[str]) -> Outcomes:
    outcomes = Outcomes()
    pytest.main([*args, "-q", "-p", "no:cacheprovider", "-W", "ignore"], plugins=[outcomes])
    return outcomes


def write(path: str | None, results: dict) -> None:
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", action="append", required=True, help="a kernel's name")
    parser.add_argument("--repeat", type=int, default=10, help="runs of the tests per config")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("tests", nargs="+", help="pytest arguments (after --)")
    args = parser.parse_args()
    first = run_tests(args.tests)  # imports the library, so its autotuners exist
    print(f"unforced: {first.passed} passed, {first.failed} failed", flush=True)
    results: dict[str, Any] = {"unforced": {"passed": first.passed, "failed": first.failed},
                               "kernels": {}}
    for name in args.kernel:
        tuners = autotuners(name)
        if not tuners:
            print(f"{name}: no autotuned kernel of this name was loaded", flush=True)
            results["kernels"][name] = {"error": "not loaded"}
            continue
        rows: list[dict] = []
        results["kernels"][name] = {"configs": rows}
        for tuner in tuners:
            original = list(tuner.configs)
            try:
                for config in original:
                    tuner.configs, tuner.cache = [config], {}
                    passed = failed = 0
                    failure = ""
                    for _ in range(args.repeat):
                        outcome = run_tests(args.tests)
                        passed, failed = passed + outcome.passed, failed + outcome.failed
                        failure = failure or outcome.first_failure
                    rows.append({"config": config_text(config), "passed": passed,
                                 "failed": failed, "right": failed == 0 and passed > 0,
                                 "first_failure": failure})
                    print(f"{name}  {config_text(config):<50} {passed} passed, {failed} failed",
                          flush=True)
                    write(args.json, results)  # after each config: a run cut short keeps them
            finally:
                tuner.configs, tuner.cache = original, {}
    write(args.json, results)

if __name__ == "__main__":
    sys.exit(main())
