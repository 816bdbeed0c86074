"""Staged timing on a GPU: every candidate briefly, only the contenders again, in turns."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.conftest import KERNELS
from tunegate.autotune import Store, Tuner
from tunegate.autotune.search import ROUNDS
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy

pytestmark = pytest.mark.gpu


def test_only_contenders_are_timed_again_in_turns_and_the_winner_is_one(tmp_path):
    from tests.kernels import pipelined_copy

    events = []
    tuner = Tuner(pipelined_copy.TASK_WITH_REFERENCE,
                  TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"),
                  policy=Policy([]), store=Store(tmp_path / "s.sqlite"),
                  progress=events.append)
    result = tuner.run()
    full = [e["trial"] for e in events if e["event"] == "full_timing"]
    ok = [t for t in result.trials if t.status == "ok"]
    rounds = Counter(t.config for t in full)
    assert 1 <= len(rounds) <= len(ok)
    assert set(rounds.values()) == {ROUNDS}  # each contender timed again in every round
    turns = [t.config for t in full]
    assert len(rounds) == 1 or turns[:len(rounds)] != turns[len(rounds):2 * len(rounds)]
    assert result.best in rounds
    # the first timing's output checked; timing again on that input can show only a race,
    # the winner's stress check's part
    assert all(t.checked_launches >= 1 for t in full)
