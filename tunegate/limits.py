"""Bounds on what may be asked of a tuning, shared by the library's checks and the CLI's options
(this module imports nothing, so the command line can read them for free)."""

MAX_DEVICES = 64
"""The most devices (run workers) a tuning uses: `--devices` and TUNEGATE_DEVICES alike (under
the interpreter each simulated device is a process)."""

MAX_LAUNCHES = 1_000_000
"""The most launches a stress check may be asked for, however small the kernel."""

MAX_DRAWS = 1000
"""The most fresh draws a stress check may be asked for: each draw's inputs and expected
outputs are held in memory at once."""
