"""Spreading work over the run workers: configs are taken as they come (compiled ahead one by
one), and a config already decided passes through as its trial."""

from __future__ import annotations

import threading
from typing import Iterator

import pytest

from tunegate.autotune.evaluator import Trial
from tunegate.autotune.schedule import measure
from tunegate.outcome import Outcome
from tunegate.space.space import Config


def _configs(n: int) -> list[Config]:
    return [Config(values={"BLOCK": 2 ** i}) for i in range(n)]


@pytest.mark.parametrize("devices", [1, 3])
def test_work_starts_before_the_last_config_arrives_and_decided_trials_pass(devices):
    configs = _configs(6)
    failed = Trial(config=Config(values={"BLOCK": 0}), status=Outcome.COMPILE_ERROR)
    arrived = threading.Event()
    started_early = []

    def ready() -> Iterator[Config | Trial]:
        yield failed
        yield from configs[:-1]
        arrived.wait(timeout=30)  # the last one arrives only once work has begun
        yield configs[-1]

    def work(evaluator: object, config: Config) -> Trial:
        started_early.append(not arrived.is_set())
        arrived.set()
        return Trial(config=config, status=Outcome.OK, time_ms=float(config.values["BLOCK"]))

    trials = list(measure([object()] * devices, ready(), lambda: False, work))
    assert any(started_early)
    assert sorted(t.config.values["BLOCK"] for t in trials) == [0, 1, 2, 4, 8, 16, 32]
    assert [t for t in trials if t.status is Outcome.COMPILE_ERROR] == [failed]


@pytest.mark.parametrize("devices", [1, 3])
def test_nothing_is_started_once_out_of_time(devices):
    done = []

    def work(evaluator: object, config: Config) -> Trial:
        done.append(config)
        return Trial(config=config, status=Outcome.OK, time_ms=1.0)

    trials = list(measure([object()] * devices, iter(_configs(5)), lambda: len(done) >= 2, work))
    assert len(trials) == len(done) and 2 <= len(done) <= 1 + devices
