"""The search tries first the configs that ranked best at other problem sizes of the kernel."""

from __future__ import annotations

import random

import pytest

from tests.kernels.double_template import write_double
from tunegate.autotune import Store, Tuner
from tunegate.autotune.pool import close_idle_workers
from tunegate.autotune.worker import TaskRef
from tunegate.autotune.strategies import EXHAUSTIVE_BATCH, make_strategy, whole_first_batch
from tunegate.kernelfile import load_module
from tunegate.policy import Policy, detect_environment
from tunegate.space import Choice, Config, Parameter, Space

pytestmark = pytest.mark.interpreter


def test_candidates_come_in_the_order_of_their_rank_at_another_size(tmp_path):
    path = write_double(tmp_path)
    module, store = load_module(path), Store(tmp_path / "s.sqlite")
    large = Tuner(module.LARGE, TaskRef(str(path), "LARGE"), policy=Policy([]),
                  store=store).run()
    small = Tuner(module.SMALL, TaskRef(str(path), "SMALL"), policy=Policy([]),
                  store=store).run()
    close_idle_workers()
    ranked = [t.config for t in sorted(large.trials, key=lambda t: t.time_ms)]
    assert len(ranked) == 4 and small.problem != large.problem
    assert ranked != [t.config for t in large.trials]  # not the space's own order already
    assert [t.config for t in small.trials] == ranked


def test_a_list_of_one_batch_comes_whole_with_the_favoured_config_first():
    """So that it can be compiled ahead as one, before the search knows the prior."""
    space = Space(parameters={"X": Parameter(domain=Choice(choices=tuple(range(80))))})
    region = Policy([]).gate(space, detect_environment(probe_device=False))
    points = [Config(values={"X": x}) for x in range(EXHAUSTIVE_BATCH)]
    strategy = make_strategy("exhaustive", region, random.Random(0), budget=100, points=points,
                             prior={points[10]: 0.0})
    batch = strategy.next_batch({})
    assert batch[0] == points[10] and sorted(batch, key=lambda c: c["X"]) == points
    assert whole_first_batch("auto", region, points, budget=100) == points
    assert whole_first_batch("auto", region, points, budget=63) is None  # a pattern search
    assert whole_first_batch("random", region, points, budget=100) is None
    assert whole_first_batch("auto", region, None, budget=100) is None  # a space, no list
    more = [Config(values={"X": x}) for x in range(EXHAUSTIVE_BATCH + 1)]
    assert whole_first_batch("exhaustive", region, more, budget=100) is None  # two batches
