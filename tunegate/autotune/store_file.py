"""The tuning store's SQLite file: schema and migration, connections, and the write lock.

Any number of processes may read and write one database at once. Every write is one short
`BEGIN IMMEDIATE` transaction, the journal is WAL and writers wait up to `timeout` seconds for the
lock, so concurrent tuners serialize their writes and never corrupt the file; a writer that waits
longer than `timeout` gets a `StoreError`, after `on_wait` was told about each wait. Each thread
keeps its writing connection (opening one cost more than the write), anew in a forked child or
once the path names another file. A file that is not tunegate's is never converted.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..errors import TunegateError

__all__ = ["SCHEMA_VERSION", "StoreError", "StoreFile"]

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
_TABLES = ("trials", "best")


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


class StoreError(ValueError, TunegateError):
    """The store cannot be opened or is not a tunegate database."""


class StoreFile:
    """The SQLite file of a tuning store at `path` (created on first use): opened, migrated
    and locked safely by any number of processes; `Store` adds what is kept there."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = 60.0,
                 on_wait: Callable[[str], None] | None = None) -> None:
        if not str(path):
            raise StoreError("the tuning store path is empty: give a file path, or leave the "
                             "option out for the default store")
        self.path = Path(path)
        self.timeout = timeout
        self._lock_timed_out = False  # once a write waited `timeout` in vain, the rest do not
        self._kept = threading.local()  # this thread's writing connection, see `_writer`
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
                present = columns(db, "trials")
                for statement in _FROM_1:
                    if "ADD COLUMN" in statement and statement.split()[5] in present:
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
        if "trials" in tables and "run" not in columns(db, "trials"):
            raise StoreError(f"{self.path} is not a tunegate tuning store: its trials table is "
                             "not tunegate's; it was left as it is: pass another file with --store")
        return tables

    @staticmethod
    def _schema_of(db: sqlite3.Connection, tables: set[str]) -> int:
        """The schema a store without a user_version has (one restored from `sqlite3 .dump`
        loses it): read from its tables, so its bests are not dropped as schema 1's."""
        if "trials" not in tables and "best" not in tables:
            return 0  # a new, empty file
        if "trials" in tables and "task" not in columns(db, "trials"):
            return 1
        best = columns(db, "best")
        return 2 if best and "partial" not in best else SCHEMA_VERSION

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        self._wal(db)
        # In WAL mode, NORMAL syncs at checkpoints, not at each commit: a crash of the
        # process loses nothing, a power cut at most the last writes of a cache that is
        # re-measured anyway, and a tuning no longer waits for the disk at every trial.
        db.execute("PRAGMA synchronous=NORMAL")
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

    def _failed(self, verb: str, e: Exception) -> StoreError:
        """The error to raise when reading or writing the file failed with `e`."""
        return StoreError(f"cannot {verb} the tuning store at {self.path}: {e}" + self._advice(e))

    def _identity(self) -> tuple[int, int, int] | None:
        """This process and the file at the path (None: there is none)."""
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return os.getpid(), found.st_dev, found.st_ino

    def _writer(self) -> sqlite3.Connection:
        """This thread's connection for writing: the kept one while this process and the file
        at the path are those it was opened for, else a new one."""
        kept = getattr(self._kept, "db", None)
        identity = self._identity()
        if kept is not None and identity is not None and kept[0] == identity:
            return kept[1]
        self._drop_writer()
        db = self._connect()
        self._kept.db = (self._identity(), db)
        return db

    def _drop_writer(self) -> None:
        """Close this thread's kept connection (one inherited from a parent is left alone)."""
        kept = getattr(self._kept, "db", None)
        self._kept.db = None
        if kept is not None and kept[0] is not None and kept[0][0] == os.getpid():
            kept[1].close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            db = self._writer()
        except sqlite3.Error as e:
            raise self._failed("write", e) from None
        try:
            self._begin(db)
            yield db
            db.execute("COMMIT")
        except BaseException as e:
            try:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            finally:
                self._drop_writer()  # in a state of its own: the next write opens another
            if isinstance(e, (sqlite3.Error, ValueError)) and not isinstance(e, StoreError):
                raise self._failed("write", e) from None
            raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection for reading; a damaged file or row becomes a StoreError saying so."""
        try:
            db = self._connect_for_reading()
        except sqlite3.Error as e:
            raise self._failed("read", e) from None
        try:
            yield db
        except (sqlite3.Error, ValueError) as e:
            if isinstance(e, StoreError):
                raise
            raise self._failed("read", e) from None
        finally:
            db.close()
