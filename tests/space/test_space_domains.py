import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tunegate.space import Boolean, Choice, IntRange, PerLoop, Permutation, PowerOfTwo

DOMAINS = [
    PowerOfTwo(low=16, high=256, default=64),
    IntRange(low=0, high=4),
    Choice(choices=("pointer", "tensor_descriptor", None)),
    Boolean(),
    Permutation(n=3),
    PerLoop(element=IntRange(low=1, high=3), loops=2),
    PerLoop(element=Choice(choices=(None, False, True)), loops=3),
]


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.kind)
def test_protocol_is_consistent(domain):
    values = list(domain.values())
    assert domain.cardinality() == len(values)
    assert domain.contains(domain.default())
    rng = random.Random(0)
    for _ in range(20):
        v = domain.sample(rng)
        assert domain.contains(v)
        assert all(domain.contains(n) for n in domain.neighbors(v))
        assert len(domain.encode(v)) == len(domain.encode(domain.default()))


@given(st.integers(0, 2**31), st.sampled_from(DOMAINS))
def test_sampling_is_seeded(seed, domain):
    assert domain.sample(random.Random(seed)) == domain.sample(random.Random(seed))


def test_invariants_name_the_values():
    with pytest.raises(ValidationError, match=r"`low <= high` must hold, but got low=8, high=4"):
        IntRange(low=8, high=4)
    with pytest.raises(ValidationError, match="must be a power of two, but got 24"):
        PowerOfTwo(low=24, high=64)
    with pytest.raises(ValidationError, match="default 7 is not in"):
        IntRange(low=0, high=4, default=7)


def test_choice_does_not_confuse_true_and_one():
    d = Choice(choices=(0, 1))
    assert d.contains(1) and not d.contains(True)


def test_power_of_two_neighbours_are_adjacent_powers():
    assert PowerOfTwo(low=16, high=256).neighbors(64) == [32, 128]
