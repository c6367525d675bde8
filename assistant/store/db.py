"""Open the SQLite database: the right sqlite3 module, sqlite-vec, PRAGMAs, transactions.

Python's bundled `sqlite3` is often built without extension loading (Debian's 3.11 here), so
the connection falls back to `pysqlite3` (the pysqlite3-binary wheel), which can load
sqlite-vec.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import sqlite3 as _stdlib_sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlite_vec

from ..errors import StoreError

log = logging.getLogger(__name__)


def _sqlite_module() -> ModuleType:
    if hasattr(_stdlib_sqlite3.Connection, "enable_load_extension"):
        return _stdlib_sqlite3
    try:
        import pysqlite3.dbapi2 as pysqlite3  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - depends on the machine
        raise StoreError(
            "this Python's sqlite3 cannot load extensions and pysqlite3 is not installed: pip install pysqlite3-binary"
        ) from None
    return pysqlite3


sqlite = _sqlite_module()
IntegrityError = sqlite.IntegrityError
OperationalError = sqlite.OperationalError


class Database:
    """One connection, used by one writer. `atomic()` nests through savepoints.

    Every statement runs inside `atomic()` or autocommits; with `synchronous=FULL` in WAL
    mode a commit that returns is on disk.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"{self.path.parent}: cannot create the data directory: {exc.strerror}") from None
        try:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves so nesting is explicit.
            self.conn = sqlite.connect(str(path), isolation_level=None, check_same_thread=False)
        except sqlite.Error as exc:
            raise StoreError(f"{path}: cannot open database: {exc}") from None
        self.conn.row_factory = sqlite.Row
        self._lock = threading.RLock()
        self._depth = 0
        self._savepoints = itertools.count()
        try:
            self.conn.enable_load_extension(True)
            sqlite_vec.load(self.conn)
            self.conn.enable_load_extension(False)
        except sqlite.Error as exc:
            raise StoreError(f"cannot load the sqlite-vec extension: {exc}") from None
        self._configure()

    def _configure(self) -> None:
        try:
            if self.path is not None:
                mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            # Deleted content is overwritten with zeros, so forgotten text does not linger in free pages.
            self.conn.execute("PRAGMA secure_delete=ON")
            self.conn.execute("PRAGMA busy_timeout=5000")
        except sqlite.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite database: {exc}") from None

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """A transaction; nested calls become savepoints, so an inner failure rolls back only itself."""
        with self._lock:
            if self._depth == 0:
                self.conn.execute("BEGIN IMMEDIATE")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._depth -= 1
                    self.conn.execute("ROLLBACK")
                    raise
                self._depth -= 1
                self.conn.execute("COMMIT")
            else:
                name = f"sp{next(self._savepoints)}"
                self.conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._depth -= 1
                    self.conn.execute(f"ROLLBACK TO {name}")
                    self.conn.execute(f"RELEASE {name}")
                    raise
                self._depth -= 1
                self.conn.execute(f"RELEASE {name}")

    def execute(self, sql: str, params: Any = ()) -> Any:
        with self._lock:
            return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        with self._lock:
            return self.conn.executemany(sql, rows)

    def one(self, sql: str, params: Any = ()) -> Any:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Any = ()) -> list[Any]:
        return self.execute(sql, params).fetchall()

    def scalar(self, sql: str, params: Any = ()) -> Any:
        row = self.one(sql, params)
        return None if row is None else row[0]

    def close(self) -> None:
        with self._lock:
            self.conn.close()
