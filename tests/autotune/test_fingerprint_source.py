"""A task's code is read once per definition in a process: every tuning of a program
fingerprints its task again, and finding a class's source took 19 ms each time."""

import inspect
import textwrap

from tunegate._kept import Kept
from tunegate.autotune import fingerprint
from tunegate.autotune.fingerprint import callable_text, source_of


def _factory(scale):
    def scaled(x):
        return x * scale
    return scaled


class _Launch:
    def __call__(self, args):
        return args


def test_sources_are_read_once_per_definition_and_closures_still_differ(monkeypatch):
    reads = []
    real = inspect.getsource

    def counting(obj):
        reads.append(obj)
        return real(obj)

    monkeypatch.setattr(fingerprint, "_SOURCES", Kept(4096))
    monkeypatch.setattr(fingerprint.inspect, "getsource", counting)
    one, two = _factory(1), _factory(2)
    assert source_of(one) == source_of(two) == textwrap.dedent(real(one))
    assert len(reads) == 1  # one definition, read once
    assert callable_text(one) != callable_text(two)  # the closed-over values tell them apart
    assert source_of(_Launch) == source_of(_Launch) and len(reads) == 2
    assert source_of(_Launch).startswith("class _Launch:")
