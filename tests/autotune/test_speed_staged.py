"""Staged timing on a GPU: every candidate briefly, only the contenders in full."""

from __future__ import annotations

import pytest

from tests.conftest import KERNELS
from tunegate.autotune import Store, Tuner
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy

pytestmark = pytest.mark.gpu


def test_only_contenders_get_the_full_timing_and_the_winner_is_one(tmp_path):
    from tests.kernels import pipelined_copy

    events = []
    tuner = Tuner(pipelined_copy.TASK_WITH_REFERENCE,
                  TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"),
                  policy=Policy([]), store=Store(tmp_path / "s.sqlite"),
                  progress=events.append)
    result = tuner.run()
    full = [e["trial"] for e in events if e["event"] == "full_timing"]
    ok = [t for t in result.trials if t.status == "ok"]
    assert 1 <= len(full) <= len(ok)
    assert result.best in [t.config for t in full]
    assert all(t.checked_launches >= 2 for t in full)  # the full timing's output checked too
