"""The accuracy check's parts: poisoning, comparing, tolerances, evidence."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tunegate.autotune import compare, poison
from tunegate.autotune.check import judged_tolerance, tolerance


def test_poison_marks_every_element():
    f = torch.zeros(4)
    poison(f)
    assert f.isnan().all()
    i = torch.zeros(4, dtype=torch.int32)
    poison(i)
    assert (i == torch.iinfo(torch.int32).min).all()


def test_unwritten_elements_fail_with_evidence():
    want = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    got = want.clone()
    got[1, 2] = float("nan")
    bad = compare("out", got, want)
    assert bad.mismatched == 1 and bad.unwritten == 1 and bad.first_index == [1, 2]
    assert "1 of 6 elements wrong" in bad.summary()


def test_float_tolerance_and_max_errors():
    want = torch.ones(5)
    assert compare("out", want + 1e-6, want) is None
    bad = compare("out", want + torch.tensor([0, 0, 0.5, 0, 0]), want)
    assert bad.mismatched == 1 and bad.max_abs_error == pytest.approx(0.5)
    assert bad.max_rel_error == pytest.approx(0.5)
    assert compare("out", want + 0.5, want, {"float32": (1.0, 0.0)}) is None


@pytest.mark.parametrize("dtype", [torch.int32, torch.int8, torch.bool])
def test_integers_compare_bit_for_bit(dtype):
    want = torch.ones(4, dtype=dtype)
    got = want.clone()
    got[3] = 0
    assert compare("out", got, want).mismatched == 1
    assert tolerance(dtype) == (0.0, 0.0)


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no fp8 in this torch")
def test_fp8_is_bitwise():
    want = torch.tensor([1.0, 2.0]).to(torch.float8_e4m3fn)
    got = torch.tensor([1.0, 2.25]).to(torch.float8_e4m3fn)
    assert tolerance(torch.float8_e4m3fn) == (0.0, 0.0)
    assert compare("out", got, want).mismatched == 1


def test_shape_mismatch_is_a_mismatch():
    assert compare("out", torch.ones(3), torch.ones(4)).got == "shape (3,)"


@settings(max_examples=200, deadline=None)
@given(dtype=st.sampled_from([torch.float16, torch.bfloat16]),
       rtol=st.sampled_from([1e-2, 2e-2, 1e-3, 0.1, 0.0]),
       atol=st.sampled_from([1e-2, 2e-2, 2.0 ** -14, 1e-3, 0.5]),
       cases=st.lists(st.tuples(st.floats(-6e4, 6e4, allow_nan=False, width=32),
                                st.sampled_from([-1.0, 1.0]),
                                st.floats(-0.05, 0.05, allow_nan=False)),
                      min_size=1, max_size=40))
def test_the_16_bit_comparison_passes_nothing_the_float32_one_fails(dtype, rtol, atol, cases):
    """Elements put just inside and just outside the tolerance (by up to 5% of it): what the
    comparison in the tensor's own dtype passes, the float32 comparison passes too."""
    from tunegate.autotune.check import surely_inside

    for value, side, off in cases:
        want = torch.tensor([value]).to(dtype)
        bound = atol + rtol * abs(float(want))
        got = (want.float() + side * bound * (1 + off)).to(dtype)
        if surely_inside(got, want, rtol, atol):
            assert float((got.float() - want.float()).abs()) <= atol + rtol * abs(float(want))


def test_a_16_bit_output_well_inside_its_tolerance_is_passed_in_its_own_dtype():
    from tunegate.autotune.check import surely_inside

    want = torch.randn(1000, generator=torch.Generator().manual_seed(0)).half()
    assert surely_inside(want + 0.001, want, 1e-2, 1e-2)
    assert not surely_inside(want + 0.5, want, 1e-2, 1e-2)
    assert compare("out", want + 0.5, want) is not None  # the float32 comparison decides
    assert not surely_inside(want.float(), want.float(), 1e-2, 1e-2)  # float32: not its case


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
@given(written=st.lists(st.booleans(), min_size=1, max_size=24),
       wrote=st.lists(st.booleans(), min_size=24, max_size=24),
       second=st.booleans())
@settings(max_examples=40, deadline=None)
def test_written_beyond_counts_exactly_the_elements_a_launch_wrote_outside_the_mask(
        dtype, written, wrote, second):
    """Outside the baseline's writes, an element holding neither poison was written."""
    from tunegate.autotune.check import written_beyond

    mask = torch.tensor(written)
    got = torch.empty(len(written), dtype=dtype)
    poison(got, second)  # the launch was poisoned with either poison
    did = torch.tensor(wrote[:len(written)])
    got[did] = 7
    bad = written_beyond("y", got, mask)
    beyond = int((did & ~mask).sum())
    assert (bad is None) == (beyond == 0)
    if bad is not None:
        assert bad.beyond == bad.mismatched == beyond and bad.unwritten == 0
        assert "written where the baseline config writes none" in bad.summary()


_SPECIAL = st.sampled_from([0.0, float("nan"), float("inf"), -float("inf"), 1e-30, 6e4])


@settings(max_examples=150, deadline=None)
@given(dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64]),
       row_scaled=st.booleans(),
       rows=st.lists(st.lists(st.tuples(st.floats(-1e3, 1e3, allow_nan=False, width=32),
                                        st.floats(-1e-3, 1e-3, allow_nan=False), _SPECIAL,
                                        st.integers(0, 9)),
                              min_size=3, max_size=3), min_size=1, max_size=4))
def test_a_kept_bound_judges_every_output_as_the_plain_comparison_does(dtype, row_scaled, rows):
    """Outputs near, at and far from the expected values, just inside and just outside the
    tolerance, with NaN, inf and exact matches, against expected values with and without
    them: compared through one kept Bound (and one that compares 16-bit outputs in their own
    dtype first), one after another, each gets the plain comparison's verdict and evidence."""
    from tunegate.autotune.check import Bound

    def grid(i: int, cast: bool = True) -> torch.Tensor:
        t = torch.tensor([[cell[i] for cell in row] for row in rows], dtype=torch.float64)
        return t.to(dtype) if cast else t

    special, choice = grid(2), grid(3, cast=False)
    plain = grid(0)
    for want in (plain, torch.where(choice == 1, special, plain)):
        rtol, atol = judged_tolerance(want, dtype)
        bounds = [Bound(want, dtype, rtol, atol, row_scaled, narrow=n) for n in (False, True)]
        near = (want.double() * (1 + grid(1, cast=False))).to(dtype)
        # at the tolerance's edge: the elementwise limit, off by up to +-10%
        edge = (want.double() + (atol + rtol * want.double().abs())
                * (1 + 100 * grid(1, cast=False))).to(dtype)
        for got in (want.clone(), near, torch.where(choice == 0, special, want), edge,
                    want.clone()):
            plain = compare("y", got, want, row_scaled=row_scaled)
            for bound in bounds:
                assert compare("y", got, want, row_scaled=row_scaled, bound=bound) == plain
            assert (plain is None) == _inside(got, want, rtol, atol, row_scaled)


def _inside(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float,
            row_scaled: bool) -> bool:
    """The tolerance's definition, element by element, in the dtype the difference is taken
    in: a NaN matches a NaN, an inf the same inf."""
    from tunegate.autotune.check import _row_scale

    wide = torch.float64 if got.dtype == torch.float64 else torch.float32
    g, e = got.to(wide), want.to(wide)
    scale = _row_scale(e) if row_scaled else e.abs()
    ok = ((g - e).abs() <= atol + rtol * scale) | (g.isnan() & e.isnan()) | (g.isinf() & (g == e))
    return bool(ok.all())


def test_a_bound_of_other_tolerances_is_refused():
    from tunegate.autotune.check import Bound

    want = torch.ones(4)
    with pytest.raises(ValueError, match="other tolerances"):
        compare("y", want, want, bound=Bound(want, torch.float32, 0.5, 0.5, False))
