"""The chunked copy, from a module that takes $SLOW_IMPORT_S seconds to import in a compile
worker (as a large library does, fifteen processes importing it at once): tests of a tuning
that does not wait for its compile workers."""

import os
import time

from tests.kernels.pipelined_copy import TASK_WITH_REFERENCE

if os.environ.get("TUNEGATE_COMPILE_ONLY") == "1":
    time.sleep(float(os.environ.get("SLOW_IMPORT_S", "0")))

TASK = TASK_WITH_REFERENCE
