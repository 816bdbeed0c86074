"""Spaces of named parameters and the configs that are points of them."""

# No `from __future__ import annotations`: pydantic would compile each string annotation to
# build the models, which costs more at import than evaluated annotations.
import itertools
import json
import math
import random
from collections.abc import Mapping
from typing import Any, ItemsView, Iterator, KeysView

from pydantic import (BaseModel, ConfigDict, PrivateAttr, field_validator, model_serializer,
                      model_validator)

from .domains import Domain
from .features import feature
from ..errors import TunegateError

__all__ = ["LAUNCH_DEFAULTS", "LAUNCH_OPTIONS", "Config", "InvalidConfig", "Parameter", "Space"]

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""Parameters passed to a Triton launch rather than to the kernel as constexprs."""

LAUNCH_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "maxnreg": None}
"""What Triton launches with where a config leaves a launch option out."""


class InvalidConfig(ValueError, TunegateError):
    """A config that is not a point of its space: names the parameter, value and domain."""


class Parameter(BaseModel):
    """A tunable parameter: its domain and, optionally, the feature it controls."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: Domain
    features: tuple[str, ...] = ()
    doc: str = ""

    @field_validator("features", mode="before")
    @classmethod
    def _known_features(cls, names: Any) -> Any:
        names = (names,) if isinstance(names, str) else names
        for name in names:
            feature(name)
        return names


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


class Config(BaseModel):
    """A validated point of a space: parameter name -> value. Immutable and hashable.

    The one value type for a config everywhere in tunegate: it reads as a mapping, compares
    equal to the plain dict of its values, is given as one (`Trial(config={...})`) and is
    written as one in JSON; equality and hash both come from one canonical key, made once.
    """

    model_config = ConfigDict(frozen=True)

    values: dict[str, Any]
    _key: str = PrivateAttr(default="")

    @model_validator(mode="before")
    @classmethod
    def _from_mapping(cls, data: Any) -> Any:
        """A plain mapping of values is a config (as JSON and callers write one); list values
        become tuples, so that a config is immutable all the way down."""
        if isinstance(data, Mapping) and not (
                set(data) == {"values"} and isinstance(data["values"], Mapping)):
            data = {"values": data}
        if isinstance(data, Mapping) and isinstance(data.get("values"), Mapping):
            return {"values": {k: _freeze(v) for k, v in data["values"].items()}}
        return data

    @model_serializer
    def _as_values(self) -> dict[str, Any]:
        return dict(self.values)

    def model_post_init(self, context: Any) -> None:
        self._key = json.dumps(self.values, sort_keys=True, separators=(",", ":"))

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, name: object) -> bool:
        return name in self.values

    def keys(self) -> KeysView[str]:
        return self.values.keys()

    def items(self) -> ItemsView[str, Any]:
        return self.values.items()

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Config):
            return self._key == other._key
        if isinstance(other, Mapping):
            return self.values == {k: _freeze(v) for k, v in other.items()}
        return NotImplemented

    def key(self) -> str:
        """Canonical JSON: equal configs have equal keys."""
        return self._key

    def to_json(self) -> str:
        return self._key

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls(values={k: _freeze(v) for k, v in json.loads(text).items()})

    def replace(self, **changes: Any) -> "Config":
        return Config(values={**self.values, **{k: _freeze(v) for k, v in changes.items()}})

    def text(self) -> str:
        """`key=value, ...` in the order of the values, as a person would type it."""
        def fmt(v: Any) -> str:
            if isinstance(v, tuple):
                return "[" + ", ".join(fmt(x) for x in v) + "]"
            return repr(v)

        return ", ".join(f"{k}={fmt(v)}" for k, v in self.values.items())


Mapping.register(Config)  # a read-only mapping of values: `dict(config)`, `**config`


class Space(BaseModel):
    """Named parameters; the cross product of their domains."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parameters: dict[str, Parameter]

    def __iter__(self) -> Iterator[str]:
        return iter(self.parameters)

    def bound_to(self, feature_name: str) -> list[str]:
        """Names of the parameters that control `feature_name`."""
        return [n for n, p in self.parameters.items() if feature_name in p.features]

    def cardinality(self) -> int:
        return math.prod(p.domain.cardinality() for p in self.parameters.values())

    def default(self) -> Config:
        return Config(values={n: _freeze(p.domain.default()) for n, p in self.parameters.items()})

    def validate_config(self, values: Mapping[str, Any] | Config) -> Config:
        """A config of exactly this space's parameters, each inside its domain."""
        if isinstance(values, Config):
            values = values.values
        unknown = sorted(set(values) - set(self.parameters))
        if unknown:
            raise InvalidConfig(
                f"unknown parameter {unknown[0]!r} (this space has: {', '.join(self.parameters)})"
            )
        missing = [n for n in self.parameters if n not in values]
        if missing:
            raise InvalidConfig(f"missing parameter {missing[0]!r}")
        for name, param in self.parameters.items():
            value = _freeze(values[name])
            if not param.domain.contains(value):
                raise InvalidConfig(
                    f"parameter {name!r}: value {_show(value)} is not in {param.domain.describe()}"
                )
        return Config(values={n: _freeze(values[n]) for n in self.parameters})

    def complete(self, values: Mapping[str, Any]) -> Config:
        """Validate `values`, taking each parameter that is not given from its default."""
        full = {n: values[n] if n in values else p.domain.default()
                for n, p in self.parameters.items()}
        full.update({k: v for k, v in values.items() if k not in full})
        return self.validate_config(full)

    def configs(self) -> Iterator[Config]:
        """Every config of the space (mind `cardinality()` first)."""
        names = list(self.parameters)
        for combo in itertools.product(*(list(self.parameters[n].domain.values()) for n in names)):
            yield Config(values={n: _freeze(v) for n, v in zip(names, combo)})

    def sample(self, rng: random.Random) -> Config:
        return Config(
            values={n: _freeze(p.domain.sample(rng)) for n, p in self.parameters.items()}
        )

    def neighbors(self, config: Config) -> list[Config]:
        out = []
        for name, param in self.parameters.items():
            for v in param.domain.neighbors(config[name]):
                out.append(config.replace(**{name: v}))
        return out

    def encode(self, config: Config) -> list[float]:
        return [x for n, p in self.parameters.items() for x in p.domain.encode(config[n])]


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)
