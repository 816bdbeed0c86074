"""Accuracy checking: poison outputs, restore inputs, compare with dtype-aware tolerances.

Tolerances follow the dtype the kernel wrote (the output's), not the reference's: a float64
reference of a float32 output is cast to float32 first and compared with float32 tolerances.

Unwritten output elements must fail, so outputs are filled with a poison before every run: NaN
(floats) or a sentinel (integers, bools), or a second, different poison (the largest finite float,
another sentinel). An element that holds poison A after a launch poisoned with A and poison B
after one poisoned with B was not written (`follows_poison`), whatever its right value is: one
poison alone cannot see a skipped element whose right value is the poison. Arguments are
restored before every run, and every tensor argument is compared afterwards, so a kernel that
corrupts an input it should only read fails too.

A zeroed buffer of partial sums may be compared `row_scaled` (see `partials`): the relative
tolerance applies to the larger of |expected| and the largest finite |expected| in the same row
(last dimension), capped at `ROW_SCALE_CAP` times the row's mean |expected|.

Integers and bools are compared bit for bit always. A default atol is at most rtol of the
expected tensor's largest magnitude (`judged_tolerance`): it is for elements near zero beside
larger ones, and would pass any output of a tensor whose every value is below it.

A float output is compared with the tolerance of the kernel's working precision where that is
coarser than its own dtype: the narrowest float type among the call's tensors (`working_dtype`).
A float32 result computed from float16 tensors carries float16 roundings of its intermediates
(a tile cast for a dot), which a different num_warps places differently; wrong configs (a race,
a wrong dot) are off by far more. The evidence names the working dtype where it applied.

A float element near cancellation (a sum of large terms that is small; a column sum of
centred data, a matmul element) carries rounding errors of its terms' size, far above its own
tolerance, and another config adds in another order. Where a comparison fails, the expected
output's `sensitivity` is measured: the same computation (the baseline config, or the
reference) again on the draw with every float input moved by a relative `perturbation`
(float32's rtol, about a thousand of its rounding units; of its spread where data sits far
from zero: `perturb`), and how far each element moved is
allowed on top, at least its row's median move (one element's move may be small by chance)
and `ROUNDING_UNITS` of its row's magnitude (what no input perturbation shows).
Another order of additions is a far smaller change of the inputs than that, while a wrong
element (a block skipped, stale data, small values flushed to zero) is off by more.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Mapping

import torch

from .mismatch import ROW_SCALE_CAP, Mismatch

__all__ = ["DEFAULT_TOLERANCES", "Bound", "Mismatch", "bits_differ", "compare", "follows_poison",
           "holds_poison", "judged_tolerance", "perturb", "perturbation", "poison", "sensitivity",
           "surely_inside", "tolerance", "working_dtype", "written_beyond"]

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
"""(rtol, atol) per dtype; every other dtype (integers, bool, fp8) is compared bit for bit."""

_FP8 = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                    "float8_e5m2fnuz") if hasattr(torch, n)}


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _bitwise(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point or dtype in _FP8


def tolerance(dtype: torch.dtype, overrides: Mapping[str, tuple[float, float]] | None = None,
              working: torch.dtype | None = None) -> tuple[float, float]:
    """(rtol, atol) for `dtype`: the override, the default, or exact; a float default no
    tighter than that of the `working` dtype (see the module docstring)."""
    name = _name(dtype)
    if overrides and name in overrides:
        return overrides[name]
    if _bitwise(dtype):
        return (0.0, 0.0)
    own = DEFAULT_TOLERANCES.get(name, (1e-4, 1e-5))
    coarse = DEFAULT_TOLERANCES.get(_name(working), own) if working is not None else own
    return coarse if coarse[0] > own[0] else own


def judged_tolerance(expected: torch.Tensor, dtype: torch.dtype,
                     overrides: Mapping[str, tuple[float, float]] | None = None,
                     working: torch.dtype | None = None) -> tuple[float, float]:
    """(rtol, atol) an output of `dtype` is judged by against `expected`: `tolerance`, with a
    default atol no larger than rtol of `expected`'s largest finite magnitude. A default
    absolute tolerance is for elements near zero beside larger ones, not for a tensor whose
    every value is below it: a gradient of magnitude 1e-9 doubled by a wrong config is no
    rounding. A user's own (rtol, atol) for the dtype is taken as it is."""
    rtol, atol = tolerance(dtype, overrides, working)
    if _bitwise(dtype) or (overrides and _name(dtype) in overrides) or not expected.numel():
        return rtol, atol
    largest = float(expected.detach().abs().nan_to_num(nan=0.0, posinf=0.0).max())
    return rtol, min(atol, rtol * largest)


def working_dtype(tensors: Any) -> torch.dtype | None:
    """The narrowest float dtype among `tensors` (fp8 counts as bfloat16), or None."""
    floats = [torch.bfloat16 if t.dtype in _FP8 else t.dtype for t in tensors
              if isinstance(t, torch.Tensor) and t.dtype.is_floating_point]
    floats = [d for d in floats if _name(d) in DEFAULT_TOLERANCES]
    if not floats:
        return None
    return max(floats, key=lambda d: DEFAULT_TOLERANCES[_name(d)][0])


def perturbation(tensors: Any) -> float:
    """The relative size of the input perturbation behind a `sensitivity`: float64's rtol where
    every float tensor is float64, else float32's (a kernel's sums run in float32 at best)."""
    floats = [t.dtype for t in tensors if isinstance(t, torch.Tensor) and t.dtype.is_floating_point]
    wide = "float64" if floats and all(d == torch.float64 for d in floats) else "float32"
    return DEFAULT_TOLERANCES[wide][0]


# The float dtypes `perturb` moves; fp8 tensors hold quantized values, moved by no rounding.
_PERTURBED = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def perturb(tensors: list[torch.Tensor], nominal: float, seed: int) -> float:
    """Move every float tensor of `tensors` in place, each element by a random share of at most
    `nominal` (a `perturbation`) of its distance from zero or from the tensor's mean,
    whichever is smaller: data offset from zero (logits near 1000, activations of mean 100)
    moves as its spread, which is what a kernel that subtracts a max or a mean sees, and zeros
    and signs stay. 16-bit floats cannot move so little: they move by a few rounding units;
    the factor that scales the outputs' move back to one of `nominal` is returned (a linear
    estimate)."""
    moved = [t for t in tensors if t.dtype in _PERTURBED and t.numel()]
    step = max([nominal, *(4 * torch.finfo(t.dtype).eps for t in moved)])
    generators: dict[torch.device, torch.Generator] = {}
    for t in moved:
        if t.device not in generators:
            generators[t.device] = torch.Generator(device=t.device).manual_seed(seed)
        wide = torch.float64 if t.dtype == torch.float64 else torch.float32
        x = t.to(wide)
        finite = x.isfinite()
        mean = x.where(finite, 0).sum() / finite.sum().clamp_min(1)
        share = torch.rand(t.shape, generator=generators[t.device], device=t.device, dtype=wide)
        share.mul_(2 * step).sub_(step)
        t.copy_(x + torch.minimum(x.abs(), (x - mean).abs()).nan_to_num_(0.0, 0.0, 0.0) * share)
    return nominal / step


# A floor under a `sensitivity`, in rounding units of the row's magnitude (`_row_scale`): what
# no input perturbation shows, an element computed from partial sums of its row's size (a
# scan that climbs and falls back; integer codes, which are not perturbed, times float scales)
# carries about sqrt(terms) rounding units of them: 64 for 4096 terms.
ROUNDING_UNITS = 64


def sensitivity(expected: torch.Tensor, moved: torch.Tensor) -> torch.Tensor:
    """Per element, how far the expected output `moved` when its inputs were perturbed
    (`perturbation`), at least its row's (last dimension's) median move and `ROUNDING_UNITS`
    of its row's magnitude, NaN and inf counting as no move: the slack a comparison with
    `expected` allows on top of its tolerance."""
    wide = _wide(expected.dtype)
    move = (moved.detach().to(expected.device, wide) - expected.detach().to(wide)).abs()
    move = move.nan_to_num_(nan=0.0, posinf=0.0)
    if move.dim() == 0 or move.shape[-1] == 0:
        return move
    rounding = _row_scale(expected.detach().to(wide)).mul_(
        ROUNDING_UNITS * torch.finfo(wide).eps / 2)
    return torch.maximum(torch.maximum(move, move.median(dim=-1, keepdim=True).values), rounding)


def _poison_value(dtype: torch.dtype, second: bool) -> float | int | bool:
    """The first or second poison of `dtype` (of its bytes, as uint8, for fp8)."""
    if dtype in _FP8:
        return 0x7B if second else 0x7F  # finite / NaN in e4m3fn and e5m2
    if dtype.is_floating_point or dtype.is_complex:
        return torch.finfo(dtype).max if second else float("nan")
    if dtype == torch.bool:
        return not second
    info = torch.iinfo(dtype)
    if info.min < 0:
        return info.max if second else info.min
    return info.max - 1 if second else info.max


def poison(t: torch.Tensor, second: bool = False) -> None:
    """Fill with a value no correct kernel writes by accident: NaN, or an integer sentinel; with
    `second`, another value (the largest finite float, another sentinel), for `follows_poison`."""
    (t.view(torch.uint8) if t.dtype in _FP8 else t).fill_(_poison_value(t.dtype, second))


def holds_poison(t: torch.Tensor, second: bool) -> torch.Tensor:
    """Per element: does `t` hold the (first or second) poison? Any NaN counts as the first.
    One pass over `t`, compared with a scalar."""
    value = _poison_value(t.dtype, second)
    if t.dtype in _FP8:
        return t.view(torch.uint8) == value
    if (t.dtype.is_floating_point or t.dtype.is_complex) and not second:
        return t.isnan()
    return t == value


def _holds_a_poison(t: torch.Tensor) -> torch.Tensor:
    """Per element: does `t` hold either poison (what a launch left unwritten)?"""
    return holds_poison(t, False) | holds_poison(t, True)


def follows_poison(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """Per element: unwritten by both launches, one poisoned with the first poison (leaving
    `first`) and one with the second (leaving `second`)."""
    return holds_poison(first, False) & holds_poison(second, True)


def written_beyond(name: str, got: torch.Tensor, written: torch.Tensor) -> Mismatch | None:
    """Evidence that a launch wrote elements of `got` outside `written` (the baseline config's
    writes, see the runner): there it left neither poison. Two correct configs write the same
    elements; the one that writes fewer is the usual culprit (a grid or mask sized for another
    config leaves a tail unwritten), so this is a disagreement, not a pass."""
    beyond = ~written & ~_holds_a_poison(got)
    if not bool(beyond.any()):
        return None
    count = int(beyond.sum())
    flat = int(beyond.flatten().nonzero()[0])
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(beyond.shape))] \
        if beyond.dim() else []
    return Mismatch(argument=name, mismatched=count, total=beyond.numel(), unwritten=0,
                    max_abs_error=None, max_rel_error=None, first_index=index,
                    got=_show(got.flatten()[flat]), expected="unwritten, as the baseline leaves it",
                    rtol=0.0, atol=0.0, dtype=_name(got.dtype), beyond=count,
                    whole=not bool(written.any()))


def written_outside(names: tuple[str, ...], got: torch.Tensor, want: torch.Tensor
                    ) -> Mismatch | None:
    """Evidence that a launch wrote memory outside the tensors `names` (`copies.margins`:
    `got` after it, `want` as the expected launch left it): past the end of one, before its
    start, or in the gaps of a view, which in the program is the caller's other data (or no
    memory of its own at all)."""
    if got.numel() == 0:
        return None
    size = max(1, got.element_size() * (2 if got.dtype.is_complex else 1))
    differs = _bytes(got).view(-1, size).ne(_bytes(want).view(-1, size)).any(dim=1)
    if not bool(differs.any()):
        return None
    count, first = int(differs.sum()), int(differs.nonzero()[0])
    return Mismatch(argument=names[0], mismatched=count, total=got.numel(), unwritten=0,
                    max_abs_error=None, max_rel_error=None, first_index=[first],
                    got=_show(got[first]), expected=_show(want[first]), rtol=0.0, atol=0.0,
                    dtype=_name(got.dtype), outside=count)


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype in _FP8:
        return t.view(torch.uint8)
    return t


def _row_scale(ew: torch.Tensor) -> torch.Tensor:
    """Per element: its row's (last dimension's) largest finite |expected|, at most
    `ROW_SCALE_CAP` times the row's mean finite |expected|, or its own |expected|."""
    a = ew.abs().nan_to_num(nan=0.0, posinf=0.0)
    if a.dim() == 0 or a.shape[-1] == 0:
        return a
    row = torch.minimum(a.amax(dim=-1, keepdim=True),
                        a.mean(dim=-1, keepdim=True) * ROW_SCALE_CAP)
    return torch.maximum(a, row)


# A float16 / bfloat16 tensor compared in its own dtype (a third of the memory traffic of the
# float32 comparison): |got - expected| and its bound there are off by a few units in the last
# place (2^-11, 2^-8), so an element at least this share inside the tolerance there is inside
# it in float32 too; what is not, is compared in float32. The tolerance's absolute part must
# be at least float16's smallest normal (2^-14): below it, subnormal roundings are not relative.
_NARROW_MARGIN = {torch.float16: 2.0 ** -7, torch.bfloat16: 2.0 ** -5}
_NARROW_MIN_ATOL = 2.0 ** -14


def _narrow_margin(dtype: torch.dtype, atol: float) -> float | None:
    """The share of the tolerance a 16-bit comparison keeps back, or None where outputs of
    `dtype` with this `atol` are compared in float32 only."""
    margin = _NARROW_MARGIN.get(dtype)
    return None if margin is None or atol < _NARROW_MIN_ATOL else margin


def surely_inside(got: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> bool:
    """True only if every element of a 16-bit float `got` is within `atol + rtol * |expected|`
    of `expected` (same dtype) by the float32 comparison too; False says nothing (NaN, inf,
    elements near the bound, other dtypes): compare in float32 then."""
    margin = _narrow_margin(got.dtype, atol)
    if margin is None or expected.dtype != got.dtype:
        return False
    scale = 1.0 - margin
    excess = torch.sub(got, expected).abs_().sub_(expected.abs(), alpha=rtol * scale)
    return bool(excess.le(atol * scale).all())


class Bound:
    """How far each element of a float output may be from one expected tensor, kept for the
    many outputs compared with it (every timed config's with draw 0's): `atol + rtol * scale`
    in the dtype the difference is taken in (plus a `sensitivity` `slack` where given), made
    when an output first differs from it in its bits. While outputs match it bit for bit
    (`exact`), the bit comparison (two reads) goes first; once one does not, that is skipped
    and the bound (three reads) decides."""

    def __init__(self, expected: torch.Tensor, dtype: torch.dtype, rtol: float, atol: float,
                 row_scaled: bool, narrow: bool = False, slack: torch.Tensor | None = None
                 ) -> None:
        self.rtol, self.atol, self.row_scaled, self.slack = rtol, atol, row_scaled, slack
        self.expected = expected.detach().to(dtype=dtype)  # as compared: in the output's dtype
        self.exact = True
        self.narrow = narrow and _narrow_margin(dtype, atol) is not None

    @cached_property
    def wide(self) -> torch.Tensor:
        return self.expected.to(_wide(self.expected.dtype))

    @cached_property
    def limit(self) -> torch.Tensor:
        scale = _row_scale(self.wide) if self.row_scaled else self.wide.abs()
        limit = scale.mul_(self.rtol).add_(self.atol)
        return limit if self.slack is None else limit.add_(self.slack.to(limit.device))

    @cached_property
    def narrow_limit(self) -> torch.Tensor:
        """The limit in a 16-bit output's own dtype, shrunk by its margin (`surely_inside`):
        a difference inside it there is inside `limit` too, at a third of the memory traffic."""
        margin = _narrow_margin(self.expected.dtype, self.atol)
        assert margin is not None
        most = torch.finfo(self.expected.dtype).max
        return self.limit.mul(1.0 - margin).clamp_(max=most).to(self.expected.dtype)

    @staticmethod
    def nbytes(expected: torch.Tensor, dtype: torch.dtype) -> int | None:
        """The memory a kept (`narrow`) Bound of `expected` for outputs of `dtype` takes beyond
        `expected` (its limit, its copies in `dtype` and the wide dtype where those differ, and
        its narrow limit); None where outputs of `dtype` are compared bit for bit, so no Bound
        applies."""
        if _bitwise(dtype):
            return None
        wide = _wide(dtype)
        return expected.numel() * (wide.itemsize + (dtype.itemsize if expected.dtype != dtype
                                                    else 0) + (wide.itemsize if dtype != wide
                                                               else 0)
                                   + (dtype.itemsize if dtype != wide else 0))

    def admits(self, got: torch.Tensor) -> bool:
        """Every element of `got` within the bound (a NaN or inf is not: see `compare`); with
        `narrow`, a 16-bit output is first compared in its own dtype, and only where that
        does not settle it in float32."""
        if self.narrow and got.dtype == self.expected.dtype and bool(
                torch.sub(got, self.expected).abs_().le(self.narrow_limit).all()):
            return True
        return bool(torch.sub(got.to(self.wide.dtype), self.wide).abs_().le(self.limit).all())


def _wide(dtype: torch.dtype) -> torch.dtype:
    """The dtype a float difference is taken in: float32 holds the difference of two 16- or
    32-bit floats closely enough for any tolerance above float32's epsilon, at half the memory
    traffic of float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def compare(name: str, got: torch.Tensor, expected: torch.Tensor,
            overrides: Mapping[str, tuple[float, float]] | None = None,
            row_scaled: bool = False, working: torch.dtype | None = None,
            bound: Bound | None = None, slack: torch.Tensor | None = None,
            perturbed: float = 0.0) -> Mismatch | None:
    """None if `got` matches `expected` within tolerance, else the evidence. `row_scaled`:
    floats' rtol applies to the row's largest |expected|; `working`: the kernel's working
    precision (see the module docstring); `bound`: a kept Bound of `expected` for these
    tolerances (same result, less memory traffic); `slack`: a `sensitivity` of `expected`
    allowed on top, from inputs moved by `perturbed`."""
    if got.shape != expected.shape:
        return Mismatch(argument=name, mismatched=got.numel(), total=got.numel(),
                        unwritten=0, max_abs_error=None, max_rel_error=None, first_index=[],
                        got=f"shape {tuple(got.shape)}", expected=f"shape {tuple(expected.shape)}",
                        rtol=0.0, atol=0.0, dtype=_name(got.dtype))
    rtol, atol = tolerance(got.dtype, overrides, working)
    coarser = (rtol, atol) != tolerance(got.dtype, overrides)
    if bound is not None:  # made with `judged_tolerance` of its expected tensor
        if ((bound.rtol, bound.row_scaled, bound.expected.dtype) != (rtol, row_scaled, got.dtype)
                or bound.slack is not slack):
            raise ValueError(f"a bound of other tolerances for {name!r}")
        atol = bound.atol
    # Compare where the tensors live (a GPU compares 10^8 elements in milliseconds); only
    # scalars of evidence travel to the host.
    g = got.detach()
    e = bound.expected if bound is not None else \
        expected.detach().to(device=got.device, dtype=got.dtype)
    if bound is None or bound.exact:
        if not bool(bits_differ(g, e)):
            return None
        if bound is not None:
            bound.exact = False
    if bound is None:  # a pass over `expected`, only for outputs that differ in their bits
        atol = judged_tolerance(expected, got.dtype, overrides, working)[1]
    # 16-bit floats, in their dtype (a narrow bound does it cheaper); inside the elementwise
    # tolerance is inside the row-scaled one too (a row's scale is at least |expected|)
    if not (bound is not None and bound.narrow) and surely_inside(g, e, rtol, atol):
        return None
    max_abs = max_rel = None
    if _bitwise(got.dtype):
        bad = _bits(g) != _bits(e)
        unwritten = int((bad & _holds_a_poison(g)).sum())
    else:
        # Without a kept bound, the elementwise one first: inside it is inside the row-scaled
        # one too (a row's scale is at least the element's |expected|), and it needs no pass
        # over the rows.
        first = bound or Bound(e, got.dtype, rtol, atol, row_scaled=False, slack=slack)
        if first.admits(g):
            return None
        judge = first if first.row_scaled == row_scaled else \
            Bound(e, got.dtype, rtol, atol, row_scaled, slack=slack)
        gw, ew = g.to(_wide(got.dtype)), judge.wide
        diff = (gw - ew).abs()
        bad = ~(diff <= judge.limit)
        if not bool(bad.any()):
            return None
        bad &= ~((gw.isnan() & ew.isnan()) | (gw.isinf() & (gw == ew)))
        unwritten = int((bad & _holds_a_poison(g)).sum())
        finite = bad & diff.isfinite()
        if bool(finite.any()):
            max_abs = float(diff[finite].max())
            max_rel = float((diff / ew.abs().clamp_min(1e-30))[finite].max())
    count = int(bad.sum())
    if count == 0:
        return None
    flat = int(bad.flatten().nonzero()[0])
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), tuple(bad.shape))] \
        if bad.dim() else []
    return Mismatch(argument=name, mismatched=count, total=bad.numel(), unwritten=unwritten,
                    max_abs_error=max_abs, max_rel_error=max_rel, first_index=index,
                    got=_show(g.flatten()[flat]), expected=_show(e.flatten()[flat]),
                    rtol=rtol, atol=atol, dtype=_name(got.dtype),
                    row_scaled=row_scaled and not _bitwise(got.dtype),
                    working=_name(working) if coarser and working is not None else "",
                    perturbed=perturbed if slack is not None and not _bitwise(got.dtype)
                    else 0.0)


def bits_differ(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Whether two tensors of one shape and dtype differ in any bit (NaNs compared as bits):
    a 0-dim bool tensor on their device, not read back, so that the answers for many
    launches cost one synchronisation."""
    if a.shape != b.shape or a.dtype != b.dtype:
        raise ValueError(f"bits_differ needs one shape and dtype, but got {tuple(a.shape)} "
                         f"{a.dtype} and {tuple(b.shape)} {b.dtype}")
    a, b = _bytes(a), _bytes(b)
    for wide in (torch.int64, torch.int32, torch.int16):  # one 8-byte comparison where there
        # were four 16-bit ones, and an eighth of the flags
        if all(t.numel() % wide.itemsize == 0 and t.data_ptr() % wide.itemsize == 0
               for t in (a, b)):
            return a.view(wide).ne(b.view(wide)).any()
    return a.ne(b).any()


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """`t`'s bytes, made contiguous, as a flat uint8 tensor."""
    flat = t.contiguous().reshape(-1)
    if flat.dtype.is_complex:
        flat = torch.view_as_real(flat).reshape(-1)
    return flat.view(torch.uint8)


def _show(x: Any) -> str:
    v = x.item() if hasattr(x, "item") else x
    return f"{v:.6g}" if isinstance(v, float) else str(v)
