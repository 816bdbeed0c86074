"""A per-process memo of bounded size: what a long program computes again and again (a
kernel's source, its traits, a storage layout's uncovered positions), kept for its next ask."""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["Kept"]

V = TypeVar("V")


class Kept(dict):
    """A dict of at most `most` entries: keeping one more drops the oldest."""

    def __init__(self, most: int) -> None:
        super().__init__()
        self.most = most

    def keep(self, key: Any, value: V) -> V:
        """Keep `value` under `key` and return it."""
        if key not in self and len(self) >= self.most:
            del self[next(iter(self))]
        self[key] = value
        return value
