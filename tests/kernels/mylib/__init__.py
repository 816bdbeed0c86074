"""A small kernel library in the style of the Triton tutorials, using stock `triton.autotune`.

Nothing here imports tunegate: tests reach it through `tunegate.install()`, `tunegate.wrap()`,
`tunegate run`, and (in `tests/kernels/dropin_*.py`) the one-line import change.
"""
