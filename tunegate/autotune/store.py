"""The tuning store: trials, quarantine and best configs in SQLite (see `store_file`).

Keys: the task fingerprint (kernel, the jit functions it calls, grid, launch, reference, inputs,
outputs, tolerances), the problem key (shapes and dtypes), the environment fingerprint (with the
code-generation variables) and the policy fingerprint. Trials also carry the kernel's source
hash, so that `explain` can list a config's history across edits of the task. A trial's status
is its `Outcome`, stored as the outcome's value. The best for a key is the fastest correct
config across runs: `save_best` compares with the stored one in its own write transaction.
Nothing is pickled: configs and evidence are JSON.
A row damaged by hand never crashes a reader: listing, reuse and warm-start hints skip it with
one logged warning naming the store and row; a quarantine row keeps its config quarantined
whatever its reason holds; the history `policy explain` asks for is a StoreError naming the row.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable

from ..outcome import Outcome
from ..reasons import Reason
from ..space.space import Config
from .store_file import SCHEMA_VERSION, StoreError, StoreFile
from .store_rows import (DAMAGED_REASON, Best, Damaged, TrialKey, config_of, history_entry,
                         reason_of, status_of, typed)

__all__ = ["Best", "SCHEMA_VERSION", "Store", "StoreError", "TrialKey", "default_store_path",
           "open_store"]

_DAY = 86400.0
_WRONG, _OK = Outcome.WRONG.value, Outcome.OK.value  # as the status column holds them
_BEST = "SELECT rowid AS row_id, * FROM best"
_log = logging.getLogger(__name__)


def default_store_path() -> Path:
    """$TUNEGATE_STORE, else tunegate.sqlite in the user's cache directory."""
    if os.environ.get("TUNEGATE_STORE"):
        return Path(os.environ["TUNEGATE_STORE"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("tunegate")) / "tunegate.sqlite"


# A best row whose config failed an accuracy check under the same key.
_QUARANTINED = ("EXISTS (SELECT 1 FROM trials t WHERE t.task=best.task AND t.problem=best.problem "
                f"AND t.env=best.env AND t.config=best.config AND t.status='{_WRONG}')")


def _is_quarantined(db: sqlite3.Connection, key: TrialKey, config: Config) -> bool:
    """Whether `config` failed an accuracy check for the key's task, problem and environment."""
    return db.execute("SELECT 1 FROM trials WHERE task=? AND problem=? AND env=? AND config=? "
                      f"AND status='{_WRONG}' LIMIT 1",
                      (key.task, key.problem, key.env, config.key())).fetchone() is not None


def _faster(new: float | None, old: float | None) -> bool:
    """Whether a time `new` beats `old`; a missing time beats nothing and loses to any."""
    return new is not None and (old is None or new < old)


class Store(StoreFile):
    """A SQLite tuning store at `path` (created on first use)."""

    def record(self, key: TrialKey, config: Config, status: Outcome | str, *,
               time_ms: float | None = None, timing: str | None = None, checked_draws: int = 0,
               checked_launches: int = 0, reason: Reason | None = None) -> int:
        """Store one trial; returns its row id (for `update`)."""
        status = Outcome(status).value
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO trials (run, task, kernel, kernel_name, problem, env, policy, "
                "config, status, time_ms, timing, checked_draws, checked_launches, reason, "
                "created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key.run, key.task, key.kernel, key.kernel_name, key.problem, key.env,
                 key.policy, config.key(), status, time_ms, timing, checked_draws,
                 checked_launches, reason.model_dump_json() if reason else None, time.time()))
            return int(cursor.lastrowid or 0)

    def update(self, row: int, status: Outcome | str, *, time_ms: float | None, checked_draws: int,
               checked_launches: int, reason: Reason | None) -> None:
        """Record a later check of a stored trial (the winner's stress check) in its row."""
        status = Outcome(status).value
        with self._write() as db:
            db.execute("UPDATE trials SET status=?, time_ms=?, checked_draws=?, "
                       "checked_launches=?, reason=? WHERE id=?",
                       (status, time_ms, checked_draws, checked_launches,
                        reason.model_dump_json() if reason else None, row))

    def _skip(self, table: str, row: Any, e: Damaged) -> None:
        """Warn once about a damaged row that a reader leaves out (it never crashes a read)."""
        _log.warning("tunegate: warning: store %s: skipping damaged %s row %s: %s",
                     self.path, table, row, e)

    def _best_or_skip(self, row: sqlite3.Row | None) -> Best | None:
        """The best a row holds; None, with a warning, if the row is damaged."""
        if row is None:
            return None
        try:
            return Best._from_row(row)
        except Damaged as e:
            self._skip("best", row["row_id"], e)
            return None

    def quarantined(self, task: str, problem: str, env: str) -> dict[Config, Reason]:
        """Configs that failed an accuracy check for this task, problem and environment. Fail
        closed: a row whose reason is damaged still quarantines its config (with a stand-in
        reason); one whose config cannot be read is skipped with a warning."""
        with self._read() as db:
            rows = db.execute("SELECT id, config, reason FROM trials WHERE task=? AND problem=? "
                              f"AND env=? AND status='{_WRONG}'", (task, problem, env)).fetchall()
        out: dict[Config, Reason] = {}
        for r in rows:
            try:
                config = config_of(r["config"])
            except Damaged as e:
                self._skip("trials", r["id"], e)
                continue
            try:
                out[config] = reason_of(r["reason"]) or DAMAGED_REASON
            except Damaged as e:
                self._skip("trials", r["id"], e)
                out[config] = DAMAGED_REASON
        return out

    def outcomes(self, statuses: tuple[str, ...] = (_OK, _WRONG)
                 ) -> list[tuple[str, Config, Outcome, Reason | None]]:
        """(kernel name, config, status, reason) of every trial with one of `statuses`, oldest
        first: what `policy suggest` reads. Damaged rows are skipped with a warning."""
        marks = ",".join("?" * len(statuses))
        with self._read() as db:
            rows = db.execute(f"SELECT id, kernel_name, config, status, reason FROM trials "
                              f"WHERE status IN ({marks}) ORDER BY id", statuses).fetchall()
        out = []
        for r in rows:
            try:
                out.append((str(r["kernel_name"]), config_of(r["config"]),
                            status_of(r["status"]), reason_of(r["reason"])))
            except Damaged as e:
                self._skip("trials", r["id"], e)
        return out

    def best(self, task: str, problem: str, env: str) -> Best | None:
        """The stored best of the key, unless its config is quarantined as wrong there (a
        quarantined config is never reused, whatever a best row says). A damaged best row is
        skipped with a warning: the tuning searches as if none were stored."""
        with self._read() as db:
            row = db.execute(f"{_BEST} WHERE task=? AND problem=? AND env=? "
                             f"AND NOT {_QUARANTINED}", (task, problem, env)).fetchone()
        return self._best_or_skip(row)

    def has_best(self, task: str, env: str) -> bool:
        """Whether a complete, unquarantined best of this task is stored for this environment
        (any problem)."""
        with self._read() as db:
            return db.execute(f"SELECT 1 FROM best WHERE task=? AND env=? AND partial=0 "
                              f"AND NOT {_QUARANTINED} LIMIT 1", (task, env)).fetchone() is not None

    def timings_elsewhere(self, kernel: str, env: str, problem: str
                          ) -> list[tuple[str, Config, float]]:
        """(problem, config, fastest correct ms) of this kernel at every other problem size in
        this environment: what earlier runs say about which configs tend to win."""
        with self._read() as db:
            rows = db.execute("SELECT MIN(id) AS id, problem, config, MIN(time_ms) AS ms "
                              "FROM trials WHERE kernel=? AND env=? AND problem!=? AND "
                              f"status='{_OK}' AND time_ms IS NOT NULL GROUP BY problem, config",
                              (kernel, env, problem)).fetchall()
        out = []
        for r in rows:  # a damaged row is skipped with a warning: this is only a hint
            try:
                out.append((typed(r, "problem", str, nullable=False), config_of(r["config"]),
                            typed(r, "ms", (int, float), nullable=False)))
            except Damaged as e:
                self._skip("trials", r["id"], e)
        return out

    def save_best(self, key: TrialKey, config: Config, time_ms: float | None,
                  timing: str | None, *, partial: bool = False, measured: int | None = None,
                  budget: int | None = None) -> Best | None:
        """Store `config` as the best for the key unless the stored one is faster; returns the
        best stored afterwards (None if there is none). Read and write are one transaction, so
        of two runs that finish together the faster wins, never the later. The key stays
        partial only while every run that stored it was partial. A config quarantined as wrong
        for the key is refused, and a stored best proven wrong since is dropped first (never
        kept, never promoted from partial to complete)."""
        with self._write() as db:
            args = (key.task, key.problem, key.env)
            db.execute(f"DELETE FROM best WHERE task=? AND problem=? AND env=? "
                       f"AND {_QUARANTINED}", args)
            if _is_quarantined(db, key, config):
                row = db.execute(f"{_BEST} WHERE task=? AND problem=? AND env=?",
                                 args).fetchone()
                return self._best_or_skip(row)
            # a damaged stored best is replaced, as if none were stored
            old = self._best_or_skip(db.execute(f"{_BEST} WHERE task=? AND problem=? AND env=?",
                                                args).fetchone())
            if old is not None and not _faster(time_ms, old.time_ms) and old.config != config:
                if old.partial and not partial:
                    db.execute("UPDATE best SET partial=0, measured=NULL, budget=NULL WHERE "
                               "task=? AND problem=? AND env=?",
                               (key.task, key.problem, key.env))
            else:
                keep_partial = partial and (old is None or old.partial)
                if old is not None and not _faster(time_ms, old.time_ms):
                    time_ms = old.time_ms  # the same config: keep its best time
                db.execute("INSERT OR REPLACE INTO best (task, kernel, kernel_name, problem, "
                           "env, policy, config, time_ms, timing, created, partial, measured, "
                           "budget) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           (key.task, key.kernel, key.kernel_name, key.problem, key.env,
                            key.policy, config.key(), time_ms, timing, time.time(),
                            int(keep_partial), measured if keep_partial else None,
                            budget if keep_partial else None))
            row = db.execute(f"{_BEST} WHERE task=? AND problem=? AND env=?",
                             (key.task, key.problem, key.env)).fetchone()
            return self._best_or_skip(row)

    def bests(self, kernel_name: str | None = None) -> list[Best]:
        """Every stored best (of one kernel, by name), newest first; a damaged row is skipped
        with a warning, so that `store list` shows the rest."""
        with self._read() as db:
            rows = db.execute(f"{_BEST} WHERE ? IS NULL OR kernel_name=? "
                              "ORDER BY created DESC", (kernel_name, kernel_name)).fetchall()
        return [b for b in map(self._best_or_skip, rows) if b is not None]

    def kernel_names(self) -> list[str]:
        """The names of the kernels with stored trials or bests."""
        with self._read() as db:
            rows = db.execute("SELECT kernel_name FROM trials UNION SELECT kernel_name FROM best "
                              "ORDER BY 1").fetchall()
            return [r[0] for r in rows if r[0]]

    def clear_quarantine(self, kernel_name: str | None = None) -> int:
        """Delete the trials that failed an accuracy check (of one kernel, by name), so the next
        run measures those configs again; returns how many were deleted."""
        with self._write() as db:
            return db.execute(f"DELETE FROM trials WHERE status='{_WRONG}' AND (? IS NULL OR "
                              "kernel_name=?)", (kernel_name, kernel_name)).rowcount

    def prune(self, older_than_days: float | None = None, kernel_name: str | None = None
              ) -> tuple[int, int]:
        """Delete bests and trials older than `older_than_days` (all ages if None) of one kernel
        (all if None); returns (bests, trials) deleted."""
        cutoff = time.time() - older_than_days * _DAY if older_than_days is not None else None
        where = "(? IS NULL OR created < ?) AND (? IS NULL OR kernel_name=?)"
        args = (cutoff, cutoff, kernel_name, kernel_name)
        with self._write() as db:
            bests = db.execute(f"DELETE FROM best WHERE {where}", args).rowcount
            trials = db.execute(f"DELETE FROM trials WHERE {where}", args).rowcount
        return bests, trials

    def forget_best(self, task: str, problem: str, env: str, config: Config | None = None
                    ) -> None:
        """Delete the key's stored best (only if it is `config`, when given): it failed a
        check, so it must not be reused."""
        with self._write() as db:
            db.execute("DELETE FROM best WHERE task=? AND problem=? AND env=? "
                       "AND (? IS NULL OR config=?)",
                       (task, problem, env, *(2 * [config.key() if config else None])))

    def history(self, kernel: str, config: Config, task: str | None = None
                ) -> list[dict[str, Any]]:
        """Every recorded trial of `config` for `kernel`, newest first, with its rank by time;
        `current` says whether it was made with the task fingerprint `task` (None: every trial
        of this kernel's source, the drop-in's calls of an autotuned kernel). A damaged row is a
        StoreError naming it (with what to do), not a gap: `policy explain --store` is asked
        about this very config, and leaving out one of its trials would change the answer."""
        with self._read() as db:
            rows = db.execute("SELECT * FROM trials WHERE kernel=? AND config=? "
                              "ORDER BY created DESC", (kernel, config.key())).fetchall()
            out = []
            for r in rows:
                try:
                    out.append(history_entry(db, r, task))
                except Damaged as e:
                    raise Damaged(f"damaged trials row {r['id']}: {e}") from None
        return out

    def integrity(self) -> str:
        with self._read() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]


def open_store(path: str | os.PathLike[str] | None = None,
               on_wait: Callable[[str], None] | None = None) -> Store:
    """The store at `path`, else the default one; an empty path is an error, not the default."""
    return Store(default_store_path() if path is None else path, on_wait=on_wait)
