"""A test-only reproducer of an intermittent bug that does not show: repro_copy's pipelined copy
with poisoned launches per config, right in every launch under the interpreter, so `policy
verify` finds it not reproduced (not fixed: a race may just not have shown)."""

from tests.kernels.pipelined_copy import TASK
from tunegate.autotune.reproducer import Reproducer

REPRODUCER = Reproducer(task=TASK.model_copy(update={"name": "repro_copy_race"}),
                        shows=("wrong",), backends=("gpu", "interpreter"), draws=1, launches=3)
