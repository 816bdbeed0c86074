"""`import tunegate.policy` stays cheap: it imports neither torch, triton nor importlib.metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "triton", "importlib.metadata")


def _modules_after(code: str, **env: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_policy_imports_no_heavy_module():
    loaded = _modules_after("import tunegate.policy")
    assert not [m for m in HEAVY if m in loaded]


def test_policy_names_still_import_from_the_package():
    loaded = _modules_after("from tunegate.policy import *\nimport tunegate.policy as p\n"
                            "assert all(getattr(p, n) is not None for n in p.__all__)\n"
                            "from tunegate import install, Policy\nassert callable(install)")
    assert "tunegate.policy.policy" in loaded


def test_detect_environment_on_a_cpu_host_imports_neither_torch_nor_triton():
    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/kfd"):
        pytest.skip("a GPU host: the probe must ask torch")
    loaded = _modules_after("from tunegate.policy import detect_environment\n"
                            "e = detect_environment(probe_device=True)\n"
                            "assert e.device == 'cpu' and e.range_args, e",
                            TRITON_INTERPRET="0")
    assert "torch" not in loaded and "triton" not in loaded


def test_policy_explain_without_a_kernel_imports_no_tuner_torch_or_triton():
    if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/kfd"):
        pytest.skip("a GPU host: the device probe must ask torch")
    loaded = _modules_after(
        "import contextlib, io, sys\nfrom tunegate.cli import main\n"
        "sys.argv = ['tunegate', 'policy', 'explain', 'num_warps=4']\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main()", TRITON_INTERPRET="0")
    assert not [m for m in loaded if m.split(".")[0] in ("torch", "triton")
                or m.startswith("tunegate.autotune")]
