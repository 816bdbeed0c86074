"""Results are never lost or pinned: the fastest correct best wins across runs, an interrupted
run's best is partial and searched on, and every failure path keeps what was measured."""

import sqlite3

import pytest

from tests.conftest import KERNELS
from tunegate.autotune import Budget, Store, TuneError, Tuner
from tunegate.autotune.store import StoreError, TrialKey
from tunegate.autotune.worker import TaskRef
from tunegate.policy import Policy
from tunegate.space import Config


def key(run="r"):
    return TrialKey(run=run, task="t", kernel="k", kernel_name="copy", problem="n=8", env="e",
                    policy="p")


def cfg(block):
    return Config(values={"BLOCK": block})


def test_the_faster_best_wins_never_the_later(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert store.save_best(key("a"), cfg(32), 3.0, "gpu").config == cfg(32)
    kept = store.save_best(key("b"), cfg(64), 5.0, "gpu")  # slower, finished later
    assert kept.config == cfg(32) and kept.time_ms == 3.0
    assert store.save_best(key("c"), cfg(128), 2.0, "gpu").config == cfg(128)
    again = store.save_best(key("d"), cfg(128), 2.5, "gpu")  # the same config, slower this time
    assert again.time_ms == 2.0


def test_partial_bests_stay_partial_until_a_complete_run(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    best = store.save_best(key(), cfg(32), 3.0, "gpu", partial=True, measured=3, budget=10)
    assert best.partial and (best.measured, best.budget) == (3, 10)
    slower = store.save_best(key(), cfg(64), 4.0, "gpu")  # complete, but slower: kept, complete
    assert slower.config == cfg(32) and not slower.partial and slower.measured is None
    faster = store.save_best(key(), cfg(16), 1.0, "gpu", partial=True, measured=1, budget=10)
    assert faster.config == cfg(16) and not faster.partial  # a complete search was done


def test_a_locked_store_waits_with_a_message_then_fails_cleanly(tmp_path):
    waits = []
    store = Store(tmp_path / "s.sqlite", timeout=1.0, on_wait=waits.append)
    holder = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="held its lock for over 1 s: try again"):
            store.save_best(key(), cfg(32), 3.0, "gpu")
    finally:
        holder.execute("ROLLBACK")
    assert waits and "locked by another process; waiting up to" in waits[0]
    assert store.save_best(key(), cfg(32), 3.0, "gpu").config == cfg(32)  # free again


def test_a_schema_2_store_is_migrated_with_its_bests_kept(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE trials (id INTEGER PRIMARY KEY, run TEXT NOT NULL,
              task TEXT NOT NULL DEFAULT '', kernel TEXT NOT NULL, kernel_name TEXT NOT NULL,
              problem TEXT NOT NULL, env TEXT NOT NULL, policy TEXT NOT NULL,
              config TEXT NOT NULL, status TEXT NOT NULL, time_ms REAL, timing TEXT,
              checked_draws INTEGER NOT NULL DEFAULT 0, reason TEXT, created REAL NOT NULL,
              checked_launches INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE best (task TEXT NOT NULL, kernel TEXT NOT NULL, problem TEXT NOT NULL,
              env TEXT NOT NULL, policy TEXT NOT NULL, config TEXT NOT NULL, time_ms REAL,
              timing TEXT, created REAL NOT NULL, PRIMARY KEY (task, problem, env));
            INSERT INTO trials (run, task, kernel, kernel_name, problem, env, policy, config,
              status, time_ms, created) VALUES ('r','t','k','copy','n=8','e','p','{"BLOCK":32}',
              'ok', 3.0, 1.0);
            INSERT INTO best VALUES ('t','k','n=8','e','p','{"BLOCK":32}',3.0,'gpu',1.0);
            PRAGMA user_version=2;""")
    best, = Store(path).bests()
    assert best.config == cfg(32) and not best.partial and best.kernel_name == "copy"


# -- the tuner's failure paths, on a real kernel under the interpreter -------------------------
def tuner(store, **options):
    from tests.kernels.pipelined_copy import TASK_WITH_REFERENCE as TASK

    return Tuner(TASK, TaskRef(str(KERNELS / "pipelined_copy.py"), "TASK_WITH_REFERENCE"),
                 policy=Policy([]), store=store, strategy="exhaustive",
                 **{"budget": Budget(configs=6), **options})


def interrupt_on(*events, after=2):
    """A progress callback that raises KeyboardInterrupt (a Ctrl-C) on these events, from the
    `after`-th trial on."""
    def progress(event):
        if event["event"] in events and (event["event"] != "trial" or event["n"] >= after):
            raise KeyboardInterrupt
    return progress


@pytest.mark.interpreter
def test_ctrl_c_paths_keep_results_and_partial_bests_are_searched_on(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    # Ctrl-C in the search, then again in the winner's stress check: nothing passed one, so no
    # best is stored, but every trial is, and the error carries them.
    with pytest.raises(TuneError) as failed:
        tuner(store, progress=interrupt_on("trial", "winner_check")).run()
    result = failed.value.result
    assert result.interrupted and len(result.trials) == 2
    assert any("a second Ctrl-C" in n for n in result.notes)
    assert store.best(result.task_fingerprint, result.problem, result.env) is None
    # Ctrl-C in the search only: the best of 2 of 6 is stored, marked partial
    first = tuner(store, progress=interrupt_on("trial")).run()
    assert first.interrupted and first.best is not None
    stored = store.best(first.task_fingerprint, first.problem, first.env)
    assert stored.partial and (stored.measured, stored.budget) == (2, 6)
    # the next run does not reuse it: it searches the whole budget and stores a complete best
    second = tuner(store).run()
    assert not second.reused and len(second.trials) == 6
    assert any("interrupted run (2 of 6 configs measured)" in n for n in second.notes)
    final = store.best(first.task_fingerprint, first.problem, first.env)
    assert not final.partial
    assert final.time_ms == min(t for t in (first.best_time_ms, second.best_time_ms))
    assert tuner(store).run().reused


@pytest.mark.interpreter
def test_a_locked_store_loses_no_result(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path, timeout=0.4)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = tuner(store, budget=Budget(configs=2)).run()
    finally:
        holder.execute("ROLLBACK")
    assert result.best is not None and len(result.trials) == 2
    assert any(n.startswith("the tuning store failed") and "try again" in n
               for n in result.notes)


@pytest.mark.interpreter
def test_a_worker_that_fails_to_restart_keeps_what_was_measured(tmp_path, monkeypatch):
    from tests.kernels.faulty import TASK

    marker = tmp_path / "broken"
    monkeypatch.setenv("FRAGILE_MARKER", str(marker))
    store = Store(tmp_path / "s.sqlite")
    # the timeout is also the worker set-up limit: room for a loaded machine
    run = Tuner(TASK, TaskRef(str(KERNELS / "fragile.py"), "TASK"), policy=Policy([]),
                store=store, strategy="exhaustive", timeout=6,
                progress=lambda event: marker.touch() if event["event"] == "trial" else None)
    with pytest.raises(TuneError) as failed:
        run.run()
    result = failed.value.result
    assert result.interrupted and "timeout" in {t.status for t in result.trials}
    assert any("a worker could not be restarted" in n and "no longer be imported" in n
               for n in result.notes), result.notes
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == len(result.trials)


def test_writes_follow_the_path_when_the_file_there_is_replaced(tmp_path):
    """A store keeps its writing connection between writes, but a write goes to the file the
    path names now: not to one moved away (or deleted) meanwhile."""
    path = tmp_path / "s.sqlite"
    key = TrialKey(run="r", task="t", kernel="k", kernel_name="n", problem="p", policy="x",
                   env="e")
    first = Store(path)
    first.record(key, Config(values={"A": 1}), "ok", time_ms=1.0, timing="gpu")
    path.rename(tmp_path / "old.sqlite")
    Store(path)  # a new, empty store at the same path
    first.record(key, Config(values={"A": 2}), "ok", time_ms=1.0, timing="gpu")

    def configs(file):
        with sqlite3.connect(file) as db:
            return [r[0] for r in db.execute("SELECT config FROM trials")]

    assert configs(path) == [Config(values={"A": 2}).key()]
