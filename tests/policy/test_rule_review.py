"""benchmarks/rule_review.py on a real drop-in kernel: counts per rule, and "depends on call"
for a rule that reads problem facts no call has given yet."""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

H200 = ["--env", "device=cuda", "--env", "capability=9.0", "--env", "triton=3.6.0"]


def review(tmp_path, *env):
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    out = tmp_path / "review.json"
    run = subprocess.run([sys.executable, "benchmarks/rule_review.py",
                          "tests.kernels.dropin_descriptor", *env, "--json", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": path})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text()), run.stdout


def test_descriptor_kernel_depends_on_the_call_on_an_h200(tmp_path):
    report, text = review(tmp_path, *H200)
    (kernel,) = report["kernels"].values()
    assert (kernel["configs"], kernel["removed"], kernel["depends on call"]) == (4, 0, 2)
    assert kernel["rules"] == {
        "depends on call": {"tensor-descriptor-deep-pipeline-misaligned": 2}}
    assert "2 depends on call" in text and "tensor-descriptor-deep-pipeline-misaligned (2)" in text


def test_nothing_is_removed_where_the_bug_is_fixed(tmp_path):
    report, _ = review(tmp_path, *H200[:4], "--env", "triton=3.9.0")
    (kernel,) = report["kernels"].values()
    assert kernel["kept"] == 4 and not kernel["rules"]
