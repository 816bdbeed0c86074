"""The search tries first the configs that ranked best at other problem sizes of the kernel."""

from __future__ import annotations

import pytest

from tests.kernels.double_template import write_double
from tunegate.autotune import Store, Tuner
from tunegate.autotune.pool import close_idle_workers
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.policy import Policy

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
