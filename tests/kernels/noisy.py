"""A kernel file that prints to stdout when imported (in the CLI and in every worker)."""

from tests.kernels.pipelined_copy import TASK

print("noisy kernel file: imported")

__all__ = ["TASK"]
