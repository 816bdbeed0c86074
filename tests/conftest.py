"""Shared test set-up: the interpreter where there is no GPU, hardware markers, helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = Path(__file__).resolve().parent / "kernels"


@cache
def has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# Tests never read or write the user's own tuning store (~/.cache/tunegate): one per session.
if "TUNEGATE_STORE" not in os.environ:
    import tempfile

    os.environ["TUNEGATE_STORE"] = str(Path(tempfile.mkdtemp(prefix="tunegate-tests-"))
                                       / "store.sqlite")

# Triton reads TRITON_INTERPRET when it decorates a kernel: decide before any test imports one.
if not has_gpu():
    os.environ["TRITON_INTERPRET"] = "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "gpu" in item.keywords and not has_gpu():
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))


def policy_problems(path):
    """The problems `load_file` reports for a policy file that must not load."""
    from tunegate.policy import PolicyError, load_file

    with pytest.raises(PolicyError) as err:
        load_file(path)
    return err.value.problems


@pytest.fixture
def write_policy(tmp_path: Path):
    """Write a policies.toml from dedented text; returns its path."""
    def write(text: str, name: str = "policies.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip())
        return path
    return write


@pytest.fixture
def rules_policy(write_policy):
    """A Policy of just the given rules, each (id, action, match); title and reason filler."""
    from tunegate.policy import Policy

    def make(*rules: tuple[str, str, str]) -> Policy:
        text = "schema = 1\n" + "".join(
            f'[[rule]]\nid = "{i}"\ntitle = "t"\naction = "{a}"\nmatch = "{m}"\nreason = "r"\n'
            for i, a, m in rules)
        return Policy.from_files(write_policy(text, f"rules-{rules[0][0]}.toml"))
    return make


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty folder with no project policy and no $TUNEGATE_POLICY."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TUNEGATE_POLICY", raising=False)
    return tmp_path


def run_cli(*args: str, cwd: Path | None = None, env: dict | None = None
            ) -> subprocess.CompletedProcess:
    """`python -m tunegate ARGS` in a fresh process, as a user would run it (`env`: variables
    to set, or with None to unset)."""
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    full_env.pop("TUNEGATE_POLICY", None) if env is None or "TUNEGATE_POLICY" not in env else None
    return subprocess.run([sys.executable, "-m", "tunegate", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, env=full_env, timeout=600)
