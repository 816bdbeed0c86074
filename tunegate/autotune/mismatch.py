"""Evidence that a kernel's output came out wrong: one value type from the runner to the store.

Torch-free, so that the reasons, stress reports and worker replies that carry it import cheaply.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ROW_SCALE_CAP", "Mismatch"]

ROW_SCALE_CAP = 8.0
"""A row's scale (`Mismatch.row_scaled`) is at most this many times its mean |expected|: a
Gaussian row's largest |value| is under 5 times its mean |value|, while one outlier (a massive
activation, 10^4 times its row's typical value) would otherwise widen the tolerance of every
element of its row far beyond any rounding difference, and let a wrong element through."""


class Mismatch(BaseModel):
    """Evidence that one argument came out wrong."""

    model_config = ConfigDict(frozen=True)

    argument: str
    mismatched: int
    total: int
    unwritten: int  # elements still holding a poison (NaN, sentinel, largest float)
    max_abs_error: float | None  # over the finite mismatches
    max_rel_error: float | None
    first_index: list[int]
    got: str
    expected: str
    rtol: float
    atol: float
    dtype: str = ""
    row_scaled: bool = False  # rtol of max(|expected|, the row's scale: see check._row_scale)
    summed_over: tuple[int, ...] = ()  # a zeroed buffer of partials compared by these sums
    working: str = ""  # the narrower input dtype whose tolerance applied (check.working_dtype)
    perturbed: float = 0.0  # the expected move under inputs perturbed so much was allowed too
    beyond: int = 0  # elements written where the baseline config writes none (the only fault)
    whole: bool = False  # with `beyond`: the baseline config writes none of this output
    outside: int = 0  # elements written outside the argument's own (past its end, in its gaps)

    def evidence(self) -> dict:
        """The fields as a reason's evidence (`summed_over`, `working`, `beyond`, `whole`,
        `outside`, `perturbed` only where they apply)."""
        return self.model_dump(exclude={n for n in ("summed_over", "working", "beyond", "whole",
                                                    "outside", "perturbed")
                                         if not getattr(self, n)})

    def _tolerance(self) -> str:
        if self.rtol == 0 and self.atol == 0:
            return f"{self.dtype}, compared bit for bit"
        of = (f" of the row's largest |expected| (at most {ROW_SCALE_CAP:g}x its mean)"
              if self.row_scaled
              else " of the summed |expected|" if self.summed_over else "")
        source = f" computed from {self.working} tensors" if self.working else ""
        moved = (f", plus how far the expected output moves when the float inputs move by "
                 f"{self.perturbed:g} (relative)" if self.perturbed else "")
        return f"{self.dtype}{source}, rtol {self.rtol:g}{of}, atol {self.atol:g}{moved}"

    def summary(self) -> str:
        if self.outside:
            return (f"{self.argument}: {self.outside} elements written outside it (past its "
                    f"end, before its start or in the gaps of a view: the caller's other data, "
                    f"or memory it does not own); first at element {self.first_index[0]} of "
                    f"that memory: got {self.got}, expected {self.expected} left alone")
        if self.beyond:
            where = ("the baseline config writes none of this output" if self.whole else
                     "the baseline config writes none (it agrees on the others)")
            return (f"{self.argument}: {self.beyond} of {self.total} elements written where "
                    f"{where}; first at {tuple(self.first_index)}: got {self.got}")
        err = "" if self.max_abs_error is None else (
            f", max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}")
        if self.unwritten and self.dtype == "bool":  # either bool is a poison: one launch
            err += " (written wrong or left unwritten: either bool is a poison)"  # cannot tell
        elif self.unwritten:
            err += f", {self.unwritten} unwritten or NaN"
        what = "elements"
        if self.summed_over:
            axes = ", ".join(map(str, self.summed_over))
            what = (f"sums over axis {axes} (its partials' layout depends on the config, so "
                    f"their sums are compared)")
        return (f"{self.argument}: {self.mismatched} of {self.total} {what} wrong{err}; "
                f"first at {tuple(self.first_index)}: got {self.got}, expected {self.expected} "
                f"({self._tolerance()})")
