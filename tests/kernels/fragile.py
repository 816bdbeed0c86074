"""faulty.py's task, in a file that cannot be imported once $FRAGILE_MARKER exists: a worker
replaced after a timeout then fails to start."""

import os

from tests.kernels.faulty import TASK

if os.path.exists(os.environ.get("FRAGILE_MARKER", "/nonexistent")):
    raise RuntimeError("this file can no longer be imported")

__all__ = ["TASK"]
