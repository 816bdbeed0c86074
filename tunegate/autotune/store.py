"""The tuning store: trials, quarantine and best configs in SQLite.

Keys: the task fingerprint (kernel, the jit functions it calls, grid, launch, reference, inputs,
outputs, tolerances), the problem key (shapes and dtypes), the environment fingerprint (with the
code-generation variables) and the policy fingerprint. Trials also carry the kernel's source
hash, so that `explain` can list a config's history across edits of the task.
Concurrency contract: any number of processes may read and write one database at once. Every
write is one short `BEGIN IMMEDIATE` transaction on a connection of its own, the journal is WAL
and writers wait up to `timeout` seconds for the lock, so concurrent tuners serialize their
writes and never corrupt the file; a writer that waits longer than `timeout` gets a
`StoreError`, after `on_wait` was told about each wait. The best for a key is the fastest
correct config across runs: `save_best` compares with the stored one in its own write
transaction. Nothing is pickled: configs and evidence are JSON.
A row damaged by hand (config or reason not JSON, an unknown status, a number stored as text)
never crashes a reader: listing, reuse and warm-start hints skip it with one logged warning
naming the store and row; a quarantine row keeps its config quarantined whatever its reason
holds; the history `policy explain` asks for is a StoreError naming the row.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import ValidationError

from ..reasons import Reason
from ..space.space import Config
from ..errors import TunegateError

__all__ = ["Best", "Store", "StoreError", "TrialKey", "default_store_path", "open_store"]

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    task TEXT NOT NULL DEFAULT '',
    kernel TEXT NOT NULL,
    kernel_name TEXT NOT NULL,
    problem TEXT NOT NULL,
    env TEXT NOT NULL,
    policy TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    time_ms REAL,
    timing TEXT,
    checked_draws INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    created REAL NOT NULL,
    checked_launches INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trials_by_task ON trials (task, problem, env);
CREATE INDEX IF NOT EXISTS trials_by_config ON trials (kernel, config);
CREATE TABLE IF NOT EXISTS best (
    task TEXT NOT NULL,
    kernel TEXT NOT NULL,
    problem TEXT NOT NULL,
    env TEXT NOT NULL,
    policy TEXT NOT NULL,
    config TEXT NOT NULL,
    time_ms REAL,
    timing TEXT,
    created REAL NOT NULL,
    kernel_name TEXT NOT NULL DEFAULT '',
    partial INTEGER NOT NULL DEFAULT 0,
    measured INTEGER,
    budget INTEGER,
    PRIMARY KEY (task, problem, env)
);
"""

# Schema 1 keyed results by the kernel's source alone. Its trials are kept as history (with an
# empty task, so they never match a current task: neither reused nor replayed as quarantine);
# its best configs cannot be trusted under any current key and are dropped.
_FROM_1 = (
    "ALTER TABLE trials ADD COLUMN task TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE trials ADD COLUMN checked_launches INTEGER NOT NULL DEFAULT 0",
    "DROP INDEX IF EXISTS trials_by_problem",
    "DROP TABLE IF EXISTS best",
)

# Schema 2 had no partial bests (an interrupted run's best was stored as final) and no kernel
# name on a best; its bests are kept as final ones.
_FROM_2 = (
    "ALTER TABLE best ADD COLUMN kernel_name TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE best ADD COLUMN partial INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE best ADD COLUMN measured INTEGER",
    "ALTER TABLE best ADD COLUMN budget INTEGER",
    "UPDATE best SET kernel_name = COALESCE((SELECT kernel_name FROM trials "
    "WHERE trials.task = best.task LIMIT 1), '')",
)
_DAY = 86400.0
_TABLES = ("trials", "best")
# The statuses a trial is stored with: the evaluator's, and the worker's baseline_error.
_STATUSES = frozenset({"ok", "wrong", "error", "compile_error", "timeout", "crashed",
                       "baseline_error"})
_BEST = "SELECT rowid AS row_id, * FROM best"
_log = logging.getLogger(__name__)
_DAMAGED_REASON = Reason(kind="accuracy", summary="failed an accuracy check (its stored reason "
                         "is damaged)")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def default_store_path() -> Path:
    """$TUNEGATE_STORE, else tunegate.sqlite in the user's cache directory."""
    if os.environ.get("TUNEGATE_STORE"):
        return Path(os.environ["TUNEGATE_STORE"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("tunegate")) / "tunegate.sqlite"


@dataclass(frozen=True)
class TrialKey:
    """What a trial belongs to."""

    run: str
    task: str
    kernel: str
    kernel_name: str
    problem: str
    env: str
    policy: str


@dataclass(frozen=True)
class Best:
    """A stored best config; `partial` when it comes from a run stopped before its budget was
    spent (`measured` of `budget` configs): the next run searches on instead of reusing it."""

    config: Config
    policy: str
    time_ms: float | None
    timing: str | None
    partial: bool = False
    measured: int | None = None
    budget: int | None = None
    task: str = ""
    problem: str = ""
    env: str = ""
    kernel_name: str = ""
    created: float = 0.0

    @classmethod
    def _from_row(cls, row: sqlite3.Row) -> "Best":
        """The best a row holds; `_Damaged` if a value is not what tunegate writes there."""
        for col in ("policy", "task", "problem", "env", "kernel_name"):
            _typed(row, col, str, nullable=False)
        _when(_typed(row, "created", (int, float), nullable=False))  # a time a clock can show
        return cls(_config(row["config"]), row["policy"], _typed(row, "time_ms", (int, float)),
                   _typed(row, "timing", str), bool(_typed(row, "partial", int)),
                   _typed(row, "measured", int), _typed(row, "budget", int), row["task"],
                   row["problem"], row["env"], row["kernel_name"],
                   row["created"])


class _Damaged(ValueError):
    """A stored value that is not what tunegate writes there (hand-edited or damaged)."""


def _typed(row: sqlite3.Row, col: str, kind: type | tuple[type, ...],
           nullable: bool = True) -> Any:
    """`row[col]`, checked to be a `kind` (or NULL where allowed): a stored number may be text."""
    value = row[col]
    if (value is None and nullable) or (isinstance(value, kind) and type(value) is not bool):
        return value
    raise _Damaged(f"{col} is {value!r}")


def _config(text: Any) -> Config:
    """The config a row's JSON holds."""
    try:
        return Config.from_json(text)
    except (ValueError, TypeError, AttributeError, RecursionError):
        raise _Damaged(f"config is not a JSON object of values: {str(text)[:60]!r}") from None


def _reason(text: Any) -> Reason | None:
    """The reason a row's JSON holds, if any."""
    if text is None:
        return None
    try:
        return Reason.model_validate_json(text)
    except (ValidationError, ValueError, TypeError, RecursionError):
        raise _Damaged(f"reason is not a stored Reason: {str(text)[:60]!r}") from None


def _status(value: Any) -> str:
    """A row's status, one of the words tunegate stores."""
    if value not in _STATUSES:
        raise _Damaged(f"status is {value!r}")
    return value


# A best row whose config failed an accuracy check under the same key.
_QUARANTINED = ("EXISTS (SELECT 1 FROM trials t WHERE t.task=best.task AND t.problem=best.problem "
                "AND t.env=best.env AND t.config=best.config AND t.status='wrong')")


def _is_quarantined(db: sqlite3.Connection, key: TrialKey, config: Config) -> bool:
    """Whether `config` failed an accuracy check for the key's task, problem and environment."""
    return db.execute("SELECT 1 FROM trials WHERE task=? AND problem=? AND env=? AND config=? "
                      "AND status='wrong' LIMIT 1",
                      (key.task, key.problem, key.env, config.key())).fetchone() is not None


def _faster(new: float | None, old: float | None) -> bool:
    """Whether a time `new` beats `old`; a missing time beats nothing and loses to any."""
    return new is not None and (old is None or new < old)


class StoreError(ValueError, TunegateError):
    """The store cannot be opened or is not a tunegate database."""


class Store:
    """A SQLite tuning store at `path` (created on first use)."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 60.0,
                 on_wait: Callable[[str], None] | None = None) -> None:
        if not str(path):
            raise StoreError("the tuning store path is empty: give a file path, or leave the "
                             "option out for the default store")
        self.path = Path(path)
        self.timeout = timeout
        self._lock_timed_out = False  # once a write waited `timeout` in vain, the rest do not
        self.on_wait = on_wait or (lambda message: None)
        try:
            self._check_is_file()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._migrate()
        except StoreError:
            raise
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the tuning store at {self.path}: {e}"
                             + self._advice(e)) from None

    def _advice(self, e: BaseException) -> str:
        """What to do about a store error: wait for a lock, make room, make it writable, or
        (only for a file SQLite cannot read as a database) move a damaged file away."""
        name = getattr(e, "sqlite_errorname", "") or ""
        text = str(e).lower()
        code = getattr(e, "errno", None)
        if "locked" in text or name.startswith("SQLITE_BUSY"):
            return (f"; another process held its lock for over {self.timeout:.0f} s: "
                    "try again when it is done")
        if name.startswith("SQLITE_FULL") or "disk is full" in text or code == errno.ENOSPC:
            return "; the disk is full: free some space (the store itself is not damaged)"
        if (name.startswith("SQLITE_READONLY") or "readonly" in text
                or code in (errno.EACCES, errno.EPERM, errno.EROFS)):
            return ("; it is read-only (the file or its folder): `tunegate store list` can still "
                    "read it; to tune, make it writable or pass another with --store")
        if name.startswith("SQLITE_CANTOPEN"):
            return "; check that its folder exists and that you may read and write there"
        if (name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "not a database" in text
                or "malformed" in text or isinstance(e, ValueError)):
            return ("; the file is damaged: move it away or delete it (tunegate then starts a "
                    "new store and tunes again), or pass another with --store")
        return ""

    def _check_is_file(self) -> None:
        """Refuse a path that is a folder, FIFO or device before SQLite opens (or blocks on) it."""
        try:
            mode = self.path.stat().st_mode
        except OSError:
            return  # missing (created on first use) or unreadable (reported when opened)
        if not stat.S_ISREG(mode):
            kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device or socket")
            raise StoreError(f"the tuning store at {self.path} is {kind}, not a file: pass a "
                             "file path with --store")

    def _migrate(self) -> None:
        """Create the schema, or bring an older tunegate's database up to `SCHEMA_VERSION`.
        An up-to-date store is only read, so a read-only one can still be listed."""
        with self._read() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
                self._check_ours(db)
                return
        with self._write() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(f"the tuning store at {self.path} has schema {version}, newer "
                                 f"than this tunegate's {SCHEMA_VERSION}: upgrade tunegate")
            tables = self._check_ours(db)
            if version == 0:
                version = self._schema_of(db, tables)
            if version == 2:
                for statement in _FROM_2:
                    db.execute(statement)
            elif version == 1:
                columns = _columns(db, "trials")
                for statement in _FROM_1:
                    if "ADD COLUMN" in statement and statement.split()[5] in columns:
                        continue
                    db.execute(statement)
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _check_ours(self, db: sqlite3.Connection) -> set[str]:
        """The store's tables; a table that is not tunegate's means another program's database,
        which must never be converted."""
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        foreign = sorted(t for t in tables if t not in _TABLES and not t.startswith("sqlite_"))
        if foreign:
            raise StoreError(f"{self.path} is not a tunegate tuning store: it has tables "
                             f"{', '.join(foreign)[:200]}, which are not tunegate's; it was left "
                             "as it is: pass another file with --store")
        if "trials" in tables and "run" not in _columns(db, "trials"):
            raise StoreError(f"{self.path} is not a tunegate tuning store: its trials table is "
                             "not tunegate's; it was left as it is: pass another file with --store")
        return tables

    @staticmethod
    def _schema_of(db: sqlite3.Connection, tables: set[str]) -> int:
        """The schema a store without a user_version has (one restored from `sqlite3 .dump`
        loses it): read from its tables, so its bests are not dropped as schema 1's."""
        if "trials" not in tables and "best" not in tables:
            return 0  # a new, empty file
        if "trials" in tables and "task" not in _columns(db, "trials"):
            return 1
        best = _columns(db, "best")
        return 2 if best and "partial" not in best else SCHEMA_VERSION

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        self._wal(db)
        return db

    def _wal(self, db: sqlite3.Connection) -> None:
        """Switch to WAL, retrying while another process creates the same new store: SQLite
        answers that switch with "locked" at once, without waiting on its busy timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _connect_for_reading(self) -> sqlite3.Connection:
        """A connection for reading; a store we may not write (the file or its folder) is
        opened read-only, as immutable where its WAL index cannot be created."""
        try:
            return self._connect()
        except sqlite3.OperationalError as e:
            if "readonly" not in str(e).lower():
                raise
        uri = self.path.resolve().as_uri()
        try:
            return self._open_read_only(uri + "?mode=ro")
        except sqlite3.OperationalError:
            return self._open_read_only(uri + "?mode=ro&immutable=1")

    def _open_read_only(self, uri: str) -> sqlite3.Connection:
        db = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA user_version").fetchone()
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _begin(self, db: sqlite3.Connection) -> None:
        """Take the write lock, waiting in steps of a few seconds (each reported to `on_wait`)
        up to `timeout` in all; then the lock error propagates. After one such timeout, later
        writes try once and fail at once: a run must not lose `timeout` on every write."""
        if self._lock_timed_out:
            db.execute("PRAGMA busy_timeout=0")
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e):
                    raise
                raise StoreError(f"the tuning store at {self.path} is still locked by another "
                                 f"process (an earlier write waited {self.timeout:.0f} s): not "
                                 "waiting again in this run") from None
        deadline = time.monotonic() + self.timeout
        while True:
            step = max(0.0, min(5.0, max(0.1, self.timeout / 4), deadline - time.monotonic()))
            db.execute(f"PRAGMA busy_timeout={int(step * 1000)}")
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e):
                    raise
                if time.monotonic() >= deadline:
                    self._lock_timed_out = True
                    raise
                left = deadline - time.monotonic()
                self.on_wait(f"the tuning store {self.path} is locked by another process; "
                             f"waiting up to {left:.0f} s more")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            db = self._connect()
        except sqlite3.Error as e:
            raise StoreError(f"cannot write the tuning store at {self.path}: {e}"
                             + self._advice(e)) from None
        try:
            self._begin(db)
            yield db
            db.execute("COMMIT")
        except BaseException as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if isinstance(e, (sqlite3.Error, ValueError)) and not isinstance(e, StoreError):
                raise StoreError(f"cannot write the tuning store at {self.path}: {e}"
                                 + self._advice(e)) from None
            raise
        finally:
            db.close()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reading; a damaged file or row becomes a StoreError saying so."""
        try:
            db = self._connect_for_reading()
        except sqlite3.Error as e:
            raise StoreError(f"cannot read the tuning store at {self.path}: {e}"
                             + self._advice(e)) from None
        try:
            yield db
        except (sqlite3.Error, ValueError) as e:
            if isinstance(e, StoreError):
                raise
            raise StoreError(f"cannot read the tuning store at {self.path}: {e}"
                             + self._advice(e)) from None
        finally:
            db.close()

    def record(self, key: TrialKey, config: Config, status: str, *, time_ms: float | None = None,
               timing: str | None = None, checked_draws: int = 0, checked_launches: int = 0,
               reason: Reason | None = None) -> int:
        """Store one trial; returns its row id (for `update`)."""
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO trials (run, task, kernel, kernel_name, problem, env, policy, "
                "config, status, time_ms, timing, checked_draws, checked_launches, reason, "
                "created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key.run, key.task, key.kernel, key.kernel_name, key.problem, key.env,
                 key.policy, config.key(), status, time_ms, timing, checked_draws,
                 checked_launches, reason.model_dump_json() if reason else None, time.time()))
            return int(cursor.lastrowid or 0)

    def update(self, row: int, status: str, *, time_ms: float | None, checked_draws: int,
               checked_launches: int, reason: Reason | None) -> None:
        """Record a later check of a stored trial (the winner's stress check) in its row."""
        with self._write() as db:
            db.execute("UPDATE trials SET status=?, time_ms=?, checked_draws=?, "
                       "checked_launches=?, reason=? WHERE id=?",
                       (status, time_ms, checked_draws, checked_launches,
                        reason.model_dump_json() if reason else None, row))

    def _skip(self, table: str, row: Any, e: _Damaged) -> None:
        """Warn once about a damaged row that a reader leaves out (it never crashes a read)."""
        _log.warning("tunegate: warning: store %s: skipping damaged %s row %s: %s",
                     self.path, table, row, e)

    def _best_or_skip(self, row: sqlite3.Row | None) -> Best | None:
        """The best a row holds; None, with a warning, if the row is damaged."""
        if row is None:
            return None
        try:
            return Best._from_row(row)
        except _Damaged as e:
            self._skip("best", row["row_id"], e)
            return None

    def quarantined(self, task: str, problem: str, env: str) -> dict[Config, Reason]:
        """Configs that failed an accuracy check for this task, problem and environment. Fail
        closed: a row whose reason is damaged still quarantines its config (with a stand-in
        reason); one whose config cannot be read is skipped with a warning."""
        with self._read() as db:
            rows = db.execute("SELECT id, config, reason FROM trials WHERE task=? AND problem=? "
                              "AND env=? AND status='wrong'", (task, problem, env)).fetchall()
        out: dict[Config, Reason] = {}
        for r in rows:
            try:
                config = _config(r["config"])
            except _Damaged as e:
                self._skip("trials", r["id"], e)
                continue
            try:
                out[config] = _reason(r["reason"]) or _DAMAGED_REASON
            except _Damaged as e:
                self._skip("trials", r["id"], e)
                out[config] = _DAMAGED_REASON
        return out

    def outcomes(self, statuses: tuple[str, ...] = ("ok", "wrong")
                 ) -> list[tuple[str, Config, str, Reason | None]]:
        """(kernel name, config, status, reason) of every trial with one of `statuses`, oldest
        first: what `policy suggest` reads. Damaged rows are skipped with a warning."""
        marks = ",".join("?" * len(statuses))
        with self._read() as db:
            rows = db.execute(f"SELECT id, kernel_name, config, status, reason FROM trials "
                              f"WHERE status IN ({marks}) ORDER BY id", statuses).fetchall()
        out = []
        for r in rows:
            try:
                out.append((str(r["kernel_name"]), _config(r["config"]), str(r["status"]),
                            _reason(r["reason"])))
            except _Damaged as e:
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
                              "status='ok' AND time_ms IS NOT NULL GROUP BY problem, config",
                              (kernel, env, problem)).fetchall()
        out = []
        for r in rows:  # a damaged row is skipped with a warning: this is only a hint
            try:
                out.append((_typed(r, "problem", str, nullable=False), _config(r["config"]),
                            _typed(r, "ms", (int, float), nullable=False)))
            except _Damaged as e:
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
            return db.execute("DELETE FROM trials WHERE status='wrong' AND (? IS NULL OR "
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
        `current` says whether it was made with the task fingerprint `task`. A damaged row is a
        StoreError naming it (with what to do), not a gap: `policy explain --store` is asked
        about this very config, and leaving out one of its trials would change the answer."""
        with self._read() as db:
            rows = db.execute("SELECT * FROM trials WHERE kernel=? AND config=? "
                              "ORDER BY created DESC", (kernel, config.key())).fetchall()
            out = []
            for r in rows:
                try:
                    out.append(_history_entry(db, r, task))
                except _Damaged as e:
                    raise _Damaged(f"damaged trials row {r['id']}: {e}") from None
        return out

    def integrity(self) -> str:
        with self._read() as db:
            return db.execute("PRAGMA integrity_check").fetchone()[0]


def _when(created: float) -> str:
    """A stored time as a person reads it; `_Damaged` if it is no time a clock can show."""
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(created))
    except (OverflowError, OSError, ValueError):
        raise _Damaged(f"created is {created!r}") from None


def _history_entry(db: sqlite3.Connection, r: sqlite3.Row, task: str | None) -> dict[str, Any]:
    """One trial row as `history` shows it; `_Damaged` if a value is not what tunegate writes."""
    status, time_ms = _status(r["status"]), _typed(r, "time_ms", (int, float))
    entry: dict[str, Any] = {
        "when": _when(_typed(r, "created", (int, float), nullable=False)),
        "run": _typed(r, "run", str, nullable=False), "problem": r["problem"],
        "status": status, "time_ms": time_ms, "timing": _typed(r, "timing", str),
        "current": task is not None and r["task"] == task,
        "checked_draws": _typed(r, "checked_draws", int, nullable=False),
        "checked_launches": _typed(r, "checked_launches", int, nullable=False),
    }
    reason = _reason(r["reason"]) if r["reason"] else None
    if status == "ok" and time_ms is not None:
        rank, of = db.execute(
            "SELECT SUM(time_ms < ?) + 1, COUNT(*) FROM trials WHERE run=? AND "
            "status='ok' AND problem=? AND time_ms IS NOT NULL",
            (time_ms, r["run"], r["problem"])).fetchone()
        entry["rank"], entry["of"] = rank, of
        entry["summary"] = f"measured {time_ms:.4g} ms ({entry['timing']}), rank {rank} of {of}"
    else:
        entry["summary"] = f"{status}: " + (reason.summary if reason else "")
    if reason is not None:
        entry["evidence"] = reason.evidence
        entry["reason"] = reason.model_dump(mode="json")
    return entry


def open_store(path: str | os.PathLike[str] | None = None,
               on_wait: Callable[[str], None] | None = None) -> Store:
    """The store at `path`, else the default one; an empty path is an error, not the default."""
    return Store(default_store_path() if path is None else path, on_wait=on_wait)
