"""`python -m tunegate`."""

import sys

from .cli import main

sys.exit(main())
