"""The GPU benchmark runs end to end at toy size under the interpreter, and its report renders.

This is what keeps `benchmarks/gpu_session.sh` from failing on the GPU machine because a
public API it uses changed: the same phases, with two configs, on this machine.
"""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT


def test_smoke_run_of_an_anchor_list_and_its_report(tmp_path):
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore"}
    run = subprocess.run([sys.executable, "benchmarks/bench_gpu.py", "--smoke", "--out",
                          str(tmp_path), "--lists", "softmax_8192", "--timeout", "240"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    record = json.loads((tmp_path / "softmax_8192.json").read_text())
    assert record["candidates"] == 2
    assert [r["correct"] for r in record["truth"]["rows"]] == [True, True]
    assert "interpreter" in record["stock"]["skipped"]
    assert record["tunegate"]["choice"] in [r["config"] for r in record["truth"]["rows"]]
    assert record["tunegate"]["result"]["check_seconds"] > 0
    assert record["warm"]["reused"] is True
    assert record["plain"]["first_launch_s"] > 0

    report = subprocess.run([sys.executable, "benchmarks/report.py",
                             str(tmp_path / "softmax_8192.json")],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert report.returncode == 0, report.stderr
    row = next(line for line in report.stdout.splitlines() if line.startswith("| softmax_8192"))
    assert "| 2 (0) |" in row and "right" in row
    assert "check share" in report.stdout and "smoke run" in report.stdout
    assert "**softmax_8192**" in report.stdout  # the goals of issue 10 are judged


def test_tunings_in_turns_a_tree_against_stock(tmp_path):
    """benchmarks/ab_tune.py at toy size: stock (skipped here: no GPU) and a tunegate run from
    a tree, each in its own cold process, and a table of medians; each run's timeline, which
    benchmarks/trace_summary.py reads."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    run = subprocess.run([sys.executable, "benchmarks/ab_tune.py", "--list", "softmax_8192",
                          "--smoke", "--rounds", "1", "--trees", ".", "--json",
                          str(tmp_path / "ab.json"), "--trace", str(tmp_path / "traces")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    runs = json.loads((tmp_path / "ab.json").read_text())["runs"]
    assert list(runs) == [f"stock {ROOT}", f"tunegate {ROOT}"]
    assert "interpreter" in runs[f"stock {ROOT}"][0]["failed"]
    tuned = runs[f"tunegate {ROOT}"][0]
    assert tuned["wall_s"] > 0 and tuned["check_seconds"] > 0 and tuned["best"]
    assert f"| tunegate {ROOT} | 1 |" in run.stdout
    trace = tmp_path / "traces" / f"trace-{ROOT.name}-1.jsonl"
    read = subprocess.run([sys.executable, "benchmarks/trace_summary.py", "--json", str(trace)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert read.returncode == 0, read.stderr
    summary = json.loads(read.stdout)
    assert [t["task"] for t in summary["tunings"]] == ["tutorial_softmax"]
    assert summary["tunings"][0]["seconds"] > 0 and summary["program_ended_at"] > 0
