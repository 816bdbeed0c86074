"""A module that prints as it is imported (as a library warns that it sees no GPU): tests of
where that output goes in a process that imports it for the program."""

import sys

print("noisy_import: printed on import")
print("noisy_import: warned on import", file=sys.stderr)
