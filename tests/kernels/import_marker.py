"""A module that notes each process importing it, in the file $IMPORT_MARKER_FILE (tests of
spare workers importing a module ahead of its first tuning)."""

import os

with open(os.environ["IMPORT_MARKER_FILE"], "a", encoding="utf-8") as _marker:
    _marker.write(f"{os.getpid()}\n")
