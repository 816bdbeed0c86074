"""Fuzz: whatever file lies at the store path, `tunegate store list` answers in one clean line.

Random bytes, SQLite files of random tables and columns, a real store cut short, a real store
with a random `user_version`, a real store with random values in its rows: the command exits 0
or 2, says at most one `tunegate: error:` line, and never shows a traceback.
"""

from __future__ import annotations

import functools
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import FUZZ
from tunegate.autotune import Store
from tunegate.autotune.store import TrialKey
from tunegate.cli import main
from tunegate.reasons import Reason
from tunegate.space import Config

STORE_FUZZ = settings(FUZZ, max_examples=25, deadline=None,
                      suppress_health_check=[*FUZZ.suppress_health_check,
                                             HealthCheck.function_scoped_fixture])
"""Few examples: each one opens a SQLite file; capsys is reset by each example's read."""

_NAMES = st.sampled_from(["trials", "best", "x_best", "config", "id", "created", "time_ms",
                          "status", "x", "kernel_name", "partial"])
_VALUES = st.one_of(st.none(), st.integers(-2 ** 63, 2 ** 63 - 1), st.floats(),
                    st.text(max_size=20),
                    st.binary(max_size=20), st.sampled_from(["{", "[1]", "{}", "ok", "wrong"]))


@functools.cache
def _real_store_bytes() -> bytes:
    """A small store written by tunegate itself: trials of each kind and a best."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.sqlite"
        store = Store(path)
        key = TrialKey(run="r", task="t", kernel="k", kernel_name="copy", problem="n=8", env="e",
                       policy="p")
        store.record(key, Config(values={"B": 1}), "ok", time_ms=1.0, timing="gpu")
        store.record(key, Config(values={"B": 2}), "wrong",
                     reason=Reason(kind="accuracy", summary="s"))
        store.save_best(key, Config(values={"B": 1}), 1.0, "gpu")
        with sqlite3.connect(path) as db:  # fold the WAL into the file: one file to copy
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        return path.read_bytes()


def _write_tables(tables: list[tuple[str, list[str], list[list[Any]]]], version: int
                  ) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with sqlite3.connect(path) as db:
            for name, columns, rows in tables:
                cols = ", ".join(f'"{c}{i}"' if columns.count(c) > 1 else f'"{c}"'
                                 for i, c in enumerate(columns))
                db.execute(f'CREATE TABLE IF NOT EXISTS "{name}" ({cols})')
                for row in rows:
                    db.execute(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(columns))})',
                               (row + [None] * len(columns))[:len(columns)])
            db.execute(f"PRAGMA user_version={version}")
        db.close()
    return write


def _write_bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


def _real_then(edit: str, args: tuple[Any, ...], version: int | None) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes(_real_store_bytes())
        with sqlite3.connect(path) as db:
            db.execute(edit, args)
            if version is not None:
                db.execute(f"PRAGMA user_version={version}")
        db.close()
    return write


_tables = st.lists(st.tuples(_NAMES, st.lists(_NAMES, min_size=1, max_size=5),
                             st.lists(st.lists(_VALUES, max_size=5), max_size=3)),
                   max_size=3, unique_by=lambda t: t[0])
_versions = st.integers(-2 ** 31, 2 ** 31 - 1)
_edits = st.tuples(
    st.sampled_from([f"UPDATE OR IGNORE {t} SET {c}=?" for t in ("trials", "best")
                     for c in ("config", "time_ms", "created", "policy", "kernel_name")]
                    + [f"UPDATE OR IGNORE trials SET {c}=?" for c in ("status", "reason", "run")]
                    + [f"UPDATE OR IGNORE best SET {c}=?"
                       for c in ("partial", "measured", "timing")]),
    _VALUES.map(lambda v: (v,)), st.none() | _versions)

store_files = st.one_of(
    st.binary(max_size=2000).map(_write_bytes),
    st.builds(_write_tables, _tables, _versions),
    st.integers(0, 12_000).map(lambda n: _write_bytes(_real_store_bytes()[:n])),
    _versions.map(lambda v: _real_then("SELECT 1", (), v)),
    st.builds(lambda e: _real_then(*e), _edits),
)
"""A way to fill a store path with something a store list may meet."""


@STORE_FUZZ
@given(store_files)
def test_store_list_survives_any_store_file(capsys: pytest.CaptureFixture[str],
                                            write: Callable[[Path], None]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.sqlite"
        write(path)
        capsys.readouterr()
        code = main(["store", "list", "--store", str(path)])
        err = capsys.readouterr().err
    assert code in (0, 2), err
    assert err.count("tunegate: error:") <= 1, err
    assert "Traceback" not in err, err
