"""Parameter domains: the set of values one tunable parameter may take.

Every domain speaks one protocol (default, contains, cardinality, values, sample, neighbors,
encode) so that strategies and the policy region never special-case a kind of parameter.
A per-loop list of a domain is itself a domain.
"""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
import itertools
import math
import random
from typing import Annotated, Any, Callable, Iterator, Literal, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Boolean",
    "Choice",
    "Domain",
    "IntRange",
    "Permutation",
    "PerLoop",
    "PowerOfTwo",
    "Scalar",
    "ScalarDomain",
]

Scalar = Union[bool, int, float, str, None]


class _Base(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def contains(self, value: Any) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def values(self) -> Iterator[Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def cardinality(self) -> int:
        return sum(1 for _ in self.values())

    def sample(self, rng: random.Random) -> Any:
        return rng.choice(list(self.values()))

    def neighbors(self, value: Any) -> list[Any]:
        """Values one step away, for local search."""
        ordered = list(self.values())
        i = ordered.index(value)
        return [ordered[j] for j in (i - 1, i + 1) if 0 <= j < len(ordered)]

    def encode(self, value: Any) -> list[float]:
        """Numbers a model can learn from: the value's position in the domain."""
        return [float(list(self.values()).index(value))]

    # -- per position: a scalar domain is one position, `PerLoop` one per loop ---------------
    @property
    def per_position(self) -> bool:
        """Whether a value is a tuple of positions (one per loop) rather than one value."""
        return False

    @property
    def scalar(self) -> "_Base":
        """The domain of one position's value."""
        return self

    def over(self, allowed: Sequence[Any]) -> list[Any]:
        """The values this domain takes when each position takes one of `allowed`."""
        return list(allowed)

    def count_over(self, allowed: int) -> int:
        """How many values `over` gives for `allowed` values per position."""
        return allowed

    def sample_over(self, allowed: Sequence[Any], rng: random.Random) -> Any:
        """A random value of `over(allowed)`."""
        return rng.choice(allowed)

    def map_positions(self, value: Any, fn: Callable[[Any, "_Base"], Any]) -> Any:
        """`value` with `fn(position value, scalar domain)` applied to each position."""
        return fn(value, self)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class PowerOfTwo(_Base):
    """Powers of two from `low` to `high` inclusive (block sizes, warps)."""

    kind: Literal["pow2"] = "pow2"
    low: int
    high: int
    default_value: int | None = Field(default=None, alias="default")

    @model_validator(mode="after")
    def _check(self) -> "PowerOfTwo":
        for name in ("low", "high"):
            v = getattr(self, name)
            if v < 1 or v & (v - 1):
                raise ValueError(f"`{name}` must be a power of two, but got {v}")
        if self.low > self.high:
            raise ValueError(f"`low <= high` must hold, but got low={self.low}, high={self.high}")
        if self.default_value is not None and not self.contains(self.default_value):
            raise ValueError(f"default {self.default_value} is not in {self.describe()}")
        return self

    def default(self) -> int:
        return self.default_value if self.default_value is not None else self.low

    def contains(self, value: Any) -> bool:
        return _is_int(value) and self.low <= value <= self.high and not value & (value - 1)

    def values(self) -> Iterator[int]:
        v = self.low
        while v <= self.high:
            yield v
            v *= 2

    def cardinality(self) -> int:
        return int(math.log2(self.high)) - int(math.log2(self.low)) + 1

    def encode(self, value: Any) -> list[float]:
        return [math.log2(value)]

    def describe(self) -> str:
        return f"power of two in [{self.low}, {self.high}]"


class IntRange(_Base):
    """Integers from `low` to `high` inclusive (pipelining stages, unroll factors)."""

    kind: Literal["int"] = "int"
    low: int
    high: int
    default_value: int | None = Field(default=None, alias="default")

    @model_validator(mode="after")
    def _check(self) -> "IntRange":
        if self.low > self.high:
            raise ValueError(f"`low <= high` must hold, but got low={self.low}, high={self.high}")
        if self.default_value is not None and not self.contains(self.default_value):
            raise ValueError(f"default {self.default_value} is not in {self.describe()}")
        return self

    def default(self) -> int:
        return self.default_value if self.default_value is not None else self.low

    def contains(self, value: Any) -> bool:
        return _is_int(value) and self.low <= value <= self.high

    def values(self) -> Iterator[int]:
        return iter(range(self.low, self.high + 1))

    def cardinality(self) -> int:
        return self.high - self.low + 1

    def sample(self, rng: random.Random) -> int:
        return rng.randint(self.low, self.high)

    def neighbors(self, value: Any) -> list[int]:
        return [v for v in (value - 1, value + 1) if self.low <= v <= self.high]

    def encode(self, value: Any) -> list[float]:
        return [float(value)]

    def describe(self) -> str:
        return f"integer in [{self.low}, {self.high}]"


class Choice(_Base):
    """One of an explicit, ordered list of values (strings, None, numbers)."""

    kind: Literal["choice"] = "choice"
    choices: tuple[Scalar, ...]
    default_value: Scalar = Field(default=None, alias="default")

    @model_validator(mode="after")
    def _check(self) -> "Choice":
        if not self.choices:
            raise ValueError("`choices` must not be empty")
        if len({repr(c) for c in self.choices}) != len(self.choices):
            raise ValueError(f"`choices` must be distinct, but got {list(self.choices)}")
        if "default" in self.model_fields_set or self.default_value is not None:
            if not self.contains(self.default_value):
                raise ValueError(f"default {self.default_value!r} is not in {self.describe()}")
        return self

    def default(self) -> Scalar:
        if self.default_value is not None or None in self.choices:
            return self.default_value
        return self.choices[0]

    def contains(self, value: Any) -> bool:
        # `True == 1` in Python: compare type and value so that 1 is not accepted for True.
        return any(type(value) is type(c) and value == c for c in self.choices)

    def values(self) -> Iterator[Scalar]:
        return iter(self.choices)

    def cardinality(self) -> int:
        return len(self.choices)

    def neighbors(self, value: Any) -> list[Scalar]:
        return [c for c in self.choices if not (type(c) is type(value) and c == value)]

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)


class Boolean(_Base):
    """True or False."""

    kind: Literal["bool"] = "bool"
    default_value: bool = Field(default=False, alias="default")

    def default(self) -> bool:
        return self.default_value

    def contains(self, value: Any) -> bool:
        return isinstance(value, bool)

    def values(self) -> Iterator[bool]:
        return iter((False, True))

    def cardinality(self) -> int:
        return 2

    def neighbors(self, value: Any) -> list[bool]:
        return [not value]

    def describe(self) -> str:
        return "true or false"


class Permutation(_Base):
    """An ordering of `n` loop indices (Helion's `loop_orders` entries)."""

    kind: Literal["perm"] = "perm"
    n: int = Field(ge=1, le=8)

    def default(self) -> tuple[int, ...]:
        return tuple(range(self.n))

    def contains(self, value: Any) -> bool:
        return (isinstance(value, (list, tuple))
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
                and sorted(value) == list(range(self.n)))

    def values(self) -> Iterator[tuple[int, ...]]:
        return itertools.permutations(range(self.n))

    def cardinality(self) -> int:
        return math.factorial(self.n)

    def sample(self, rng: random.Random) -> tuple[int, ...]:
        order = list(range(self.n))
        rng.shuffle(order)
        return tuple(order)

    def neighbors(self, value: Any) -> list[tuple[int, ...]]:
        out = []
        for i in range(self.n - 1):
            swapped = list(value)
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            out.append(tuple(swapped))
        return out

    def encode(self, value: Any) -> list[float]:
        return [float(v) for v in value]

    def describe(self) -> str:
        return f"permutation of {list(range(self.n))}"


ScalarDomain = Annotated[
    Union[PowerOfTwo, IntRange, Choice, Boolean, Permutation], Field(discriminator="kind")
]


class PerLoop(_Base):
    """One value of `element` per loop (or per block, per load) of a kernel."""

    kind: Literal["per_loop"] = "per_loop"
    element: ScalarDomain
    loops: int = Field(ge=0)

    def default(self) -> tuple[Any, ...]:
        return tuple(self.element.default() for _ in range(self.loops))

    def contains(self, value: Any) -> bool:
        return (
            isinstance(value, (list, tuple))
            and len(value) == self.loops
            and all(self.element.contains(v) for v in value)
        )

    def values(self) -> Iterator[tuple[Any, ...]]:
        return itertools.product(list(self.element.values()), repeat=self.loops)

    def cardinality(self) -> int:
        return self.element.cardinality() ** self.loops

    def sample(self, rng: random.Random) -> tuple[Any, ...]:
        return tuple(self.element.sample(rng) for _ in range(self.loops))

    def neighbors(self, value: Any) -> list[tuple[Any, ...]]:
        out = []
        for i, v in enumerate(value):
            for n in self.element.neighbors(v):
                out.append(tuple(value[:i]) + (n,) + tuple(value[i + 1 :]))
        return out

    def encode(self, value: Any) -> list[float]:
        return [x for v in value for x in self.element.encode(v)]

    def describe(self) -> str:
        return f"{self.loops} × ({self.element.describe()})"

    @property
    def per_position(self) -> bool:
        return True

    @property
    def scalar(self) -> Any:
        return self.element

    def over(self, allowed: Sequence[Any]) -> list[Any]:
        return [tuple(v) for v in itertools.product(allowed, repeat=self.loops)]

    def count_over(self, allowed: int) -> int:
        return allowed ** self.loops

    def sample_over(self, allowed: Sequence[Any], rng: random.Random) -> tuple[Any, ...]:
        return tuple(rng.choice(allowed) for _ in range(self.loops))

    def map_positions(self, value: Any, fn: Callable[[Any, Any], Any]) -> tuple[Any, ...]:
        return tuple(fn(v, self.element) for v in value)


Domain = Annotated[
    Union[PowerOfTwo, IntRange, Choice, Boolean, Permutation, PerLoop], Field(discriminator="kind")
]
