"""`python -m tunegate`."""

import sys

from .cli import console

sys.exit(console())
