"""A `tunegate run` whose command's last run ended with bests that are all still stored starts
no spare workers (it will only reuse them); any doubt, or a wrong guess, costs time, not
results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import triton  # noqa: F401  (the memory notes the versions of torch and Triton imported)

from tests.conftest import KERNELS
from tunegate.autotune import trace
from tunegate.autotune.run_memory import MEMORY_SUFFIX, command_id, expects_reuse, remember

pytestmark = pytest.mark.interpreter

SCRIPT = str(KERNELS / "run_add.py")


def _run(tmp_path: Path, *argv: str, tag: str, extra: dict[str, str] | None = None
         ) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`tunegate run SCRIPT argv` in tmp_path with a store there; its result and trace events."""
    path = tmp_path / f"trace-{tag}.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "TUNEGATE_WARM"}
    env.update({"TUNEGATE_STORE": str(tmp_path / "store.sqlite"), trace.ENV: str(path)},
               **(extra or {}))
    done = subprocess.run([sys.executable, "-m", "tunegate", "run", SCRIPT, *argv],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done, [e["event"] for e in trace.read(str(path))]


def _rows(done: subprocess.CompletedProcess[str]) -> list[str]:
    lines = done.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("tunegate: "))
    return lines[start + 3:]


def test_a_run_that_will_only_reuse_its_bests_starts_no_spare_worker(tmp_path):
    first, events = _run(tmp_path, tag="first")
    assert "spares started" in events and "spares deferred" not in events
    assert first.stdout.strip() == "ok True True"
    second, events = _run(tmp_path, tag="second")
    assert "spares deferred" in events and "spares started" not in events
    assert second.stdout == first.stdout
    assert _rows(second) and all(" reused " in r for r in _rows(second)), second.stderr
    forced, events = _run(tmp_path, tag="forced", extra={"TUNEGATE_WARM": "1"})
    assert "spares started" in events and "spares deferred" not in events
    assert all(" reused " in r for r in _rows(forced)), forced.stderr
    _, events = _run(tmp_path, "--other-arguments", tag="other")  # another command line
    assert "spares started" in events
    pruned = subprocess.run([sys.executable, "-m", "tunegate", "store", "prune", "--older-than",
                             "0", "--store", str(tmp_path / "store.sqlite")],
                            capture_output=True, text=True)
    assert pruned.returncode == 0, pruned.stderr
    again, events = _run(tmp_path, tag="after-prune")  # its bests are gone
    assert "spares started" in events and "spares deferred" not in events
    assert not any(" reused " in r for r in _rows(again)), again.stderr


def test_a_wrong_guess_still_tunes_with_workers_started_when_needed(tmp_path, monkeypatch):
    """A memory that says the run tuned nothing last time (so nothing to warm up for), while
    the program does tune: its tunings start their own workers and are as right."""
    store = tmp_path / "store.sqlite"
    monkeypatch.chdir(tmp_path)  # command_id reads the working folder, as the run's does
    remember(store, command_id(SCRIPT, [], False), [])
    done, events = _run(tmp_path, tag="wrong-guess")
    assert "spares deferred" in events and "spares started" not in events
    assert done.stdout.strip() == "ok True True"
    assert _rows(done) and not any(" reused " in r for r in _rows(done)), done.stderr


def test_the_memory_is_doubted_when_unreadable_or_of_other_versions(tmp_path):
    store = tmp_path / "store.sqlite"
    memory = Path(f"{store}{MEMORY_SUFFIX}")
    assert not expects_reuse(store, "c")  # nothing remembered
    remember(store, "c", [])
    assert expects_reuse(store, "c")
    entry = json.loads(memory.read_text())
    entry["c"]["versions"]["triton"] = "0.0-another"
    memory.write_text(json.dumps(entry))
    assert not expects_reuse(store, "c")
    memory.write_text("{not json")
    assert not expects_reuse(store, "c")
    remember(store, "c", [("task", "problem", "env")])  # a best the store does not hold
    assert not expects_reuse(store, "c")
    remember(store, "c", None)  # a tuning ended without a best: forgotten
    assert "c" not in json.loads(memory.read_text())
