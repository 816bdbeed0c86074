"""A test-only reproducer of an intermittent bug that does show: repro_splitk's split-K row sum
(wrong on every backend) with poisoned launches per config, so `policy verify` finds it still
present, never merely "not reproduced"."""

from tests.kernels.repro_splitk import TASK
from tunegate.autotune.reproducer import Reproducer

REPRODUCER = Reproducer(task=TASK.model_copy(update={"name": "repro_splitk_race"}),
                        shows=("wrong",), backends=("gpu", "interpreter"), draws=1, launches=3)
