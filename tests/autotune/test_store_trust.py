"""The store is keyed by what decides correctness: stale results are never reused, old databases
migrate, a reused best is re-checked once per process, a relaxed policy is reported."""

import sqlite3

import pytest

from tests.kernels.double_template import write_double
from tunegate.autotune import Store, Tuner
from tunegate.autotune.worker import TaskRef
from tunegate.kernelfile import load_module
from tunegate.policy import Policy

pytestmark = pytest.mark.interpreter


def write(tmp_path, name, **changes):
    """The task file `name`: the double template with no reference, blocks 64 and 128."""
    return write_double(tmp_path, name, **{"low": 64, "reference": False, **changes})


def task_of(path):
    return load_module(path).TASK


def run(path, store, **options):
    options.setdefault("policy", Policy([]))
    return Tuner(task_of(path), TaskRef(str(path), "TASK"), store=store, **options).run()


def test_task_fingerprint_covers_grid_reference_and_called_helpers(tmp_path):
    base = task_of(write(tmp_path, "base")).fingerprint()
    assert task_of(write(tmp_path, "same")).fingerprint() == base
    for name, change in [("grid", {"extra_programs": 1}), ("reference", {"reference": True}),
                         ("helper", {"helper": "x + x"})]:
        assert task_of(write(tmp_path, name, **change)).fingerprint() != base, name
    task = task_of(write(tmp_path, "fields"))
    for update in ({"tolerances": {"float32": (1e-3, 1e-3)}}, {"reset_to_zero": ("y_ptr",)},
                   {"restore_value": ("x_ptr",)}, {"outputs": ("y_ptr", "x_ptr")}):
        assert task.model_copy(update=update).fingerprint() != base, update


def test_stale_results_are_never_reused(tmp_path, monkeypatch):
    from tunegate.autotune.reuse import Rechecked

    rechecked = Rechecked()
    store = Store(tmp_path / "s.sqlite")
    first = run(write(tmp_path, "base"), store, rechecked=rechecked)
    assert not first.reused and len(first.trials) == 2
    same = write(tmp_path, "same")
    again = run(same, store, rechecked=rechecked)
    assert again.reused and any("re-checked on a fresh draw" in n for n in again.notes)
    third = run(same, store, rechecked=rechecked)  # once per record (by default the process's)
    assert third.reused and not any("re-checked" in n for n in third.notes)
    fixed = run(write(tmp_path, "helper", helper="x + x"), store)
    assert not fixed.reused and len(fixed.trials) == 2
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert not run(same, store).reused


def test_a_relaxed_policy_says_a_retune_could_help_and_retune_forces_one(tmp_path,
                                                                          write_policy):
    strict = Policy.from_files(write_policy('''
        schema = 1
        [[rule]]
        id = "no-big-blocks"
        title = "t"
        action = "disable"
        match = "BLOCK == 128"
        reason = "r"
        '''))
    store = Store(tmp_path / "s.sqlite")
    path = write(tmp_path, "base")
    assert run(path, store, policy=strict).best == {"BLOCK": 64}
    relaxed = run(path, store, recheck_reused=False)
    assert relaxed.reused and any("may now allow faster configs" in n and "--retune" in n
                                  for n in relaxed.notes)
    retuned = run(path, store, retune=True)
    assert not retuned.reused and len(retuned.trials) == 2


def test_a_stored_best_that_is_no_config_of_the_task_is_forgotten_and_retuned(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    path = write(tmp_path, "base")
    assert not run(path, store).reused
    with sqlite3.connect(tmp_path / "s.sqlite") as db:  # a damaged row: a block the space lacks
        db.execute("""UPDATE best SET config='{"BLOCK": 4096}'""")
    again = run(path, store)
    assert not again.reused and again.best is not None
    assert any("is not a config of this task (parameter 'BLOCK'" in n and "s.sqlite" in n
               for n in again.notes), again.notes


def test_a_schema_1_database_migrates(tmp_path):
    from tunegate.autotune.store import SCHEMA_VERSION

    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript('''
            CREATE TABLE trials (id INTEGER PRIMARY KEY, run TEXT NOT NULL, kernel TEXT NOT NULL,
                kernel_name TEXT NOT NULL, problem TEXT NOT NULL, env TEXT NOT NULL,
                policy TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, time_ms REAL,
                timing TEXT, checked_draws INTEGER NOT NULL DEFAULT 0, reason TEXT,
                created REAL NOT NULL);
            CREATE TABLE best (kernel TEXT NOT NULL, problem TEXT NOT NULL, env TEXT NOT NULL,
                policy TEXT NOT NULL, config TEXT NOT NULL, time_ms REAL, timing TEXT,
                created REAL NOT NULL, PRIMARY KEY (kernel, problem, env));
            INSERT INTO trials VALUES (1, 'r', 'k', 'n', 'p', 'e', 'pol', '{"B": 1}', 'wrong',
                NULL, 'gpu', 2, NULL, 0);
            INSERT INTO best VALUES ('k', 'p', 'e', 'pol', '{"B": 1}', 1.0, 'gpu', 0);
        ''')
    store = Store(path)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("SELECT task, status FROM trials").fetchall() == [("", "wrong")]
        assert db.execute("SELECT COUNT(*) FROM best").fetchone()[0] == 0
    assert store.quarantined("k", "p", "e") == {}  # never replayed under a current key
    assert store.integrity() == "ok"
    Store(path)  # opening again is a no-op


def test_a_newer_schema_is_refused(tmp_path):
    from tunegate.autotune.store import StoreError

    path = tmp_path / "new.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=99")
    with pytest.raises(StoreError, match="schema 99, newer"):
        Store(path)
