"""The pipelined copy task in a module that notes each process importing it (see
`import_marker`): tests of compile workers that start with the program's modules."""

from tests.kernels import import_marker  # noqa: F401 - imported for its note
from tests.kernels.pipelined_copy import TASK_WITH_REFERENCE  # noqa: F401
