"""A test-only reproducer of a bug that is not there: a pipelined chunked copy, right in every
config under the interpreter (which runs loops in order), so `policy verify` finds it fixed."""

from tests.kernels.pipelined_copy import TASK
from tunegate.autotune.reproducer import Reproducer

REPRODUCER = Reproducer(task=TASK.model_copy(update={"name": "repro_copy"}), shows=("wrong",),
                        backends=("gpu", "interpreter"), draws=1)
