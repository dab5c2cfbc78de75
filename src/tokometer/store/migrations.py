"""The runs database schema, as an append-only list of named migrations (simonw/llm's way).

Each migration is a function of a connection; `migrate` applies, in order, every one whose name
is not yet in `_migrations`, each inside its own transaction (DDL too: the store's connection runs
in autocommit mode with explicit BEGIN/COMMIT), and records it. Never edit or
reorder a migration that has shipped: append a new one.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_runs_and_requests(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL,
            source TEXT NOT NULL,
            url TEXT,
            model TEXT,
            hardware TEXT,
            mode TEXT NOT NULL,
            protocol TEXT,
            config_json TEXT NOT NULL,
            server_json TEXT,
            summary_json TEXT NOT NULL,
            levels_json TEXT,
            prediction_json TEXT,
            grading_json TEXT,
            notes_json TEXT,
            tokometer_version TEXT
        )
        """
    )
    db.execute(
        """
        CREATE TABLE requests (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            phase TEXT NOT NULL,
            label TEXT NOT NULL DEFAULT '',
            grp INTEGER NOT NULL DEFAULT 0,
            ok INTEGER NOT NULL,
            error_kind TEXT,
            error TEXT,
            t0_s REAL,
            event_times_json TEXT,
            event_tokens_json TEXT,
            output_tokens INTEGER,
            output_tokens_source TEXT,
            prompt_tokens INTEGER,
            cached_tokens INTEGER,
            finish_reason TEXT,
            server_timings_json TEXT,
            record_json TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX requests_run ON requests(run_id, seq)")


@migration
def m002_run_indexes(db: sqlite3.Connection) -> None:
    db.execute("CREATE INDEX runs_started ON runs(started_at)")
    db.execute("CREATE INDEX runs_model ON runs(model)")


@migration
def m003_run_frontier(db: sqlite3.Connection) -> None:
    """A concurrency run's frontier (GPUs, definitions, predicted curve); NULL for the runs stored before."""
    db.execute("ALTER TABLE runs ADD COLUMN frontier_json TEXT")


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN ... COMMIT, or ROLLBACK on any exception (the connection is in autocommit mode).

    After some errors (SQLITE_FULL, a failed COMMIT) SQLite has already rolled back by itself; a
    second ROLLBACK would then fail and hide the error that says why ("database or disk is full").
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
        raise


def applied(db: sqlite3.Connection) -> list[str]:
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    return [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply pending migrations; return the names applied now."""
    done = set(applied(db))
    now_applied = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with transaction(db):  # DDL included: the connection runs with isolation_level=None
            fn(db)
            db.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                (fn.__name__, datetime.now(UTC).isoformat(timespec="seconds")),
            )
        now_applied.append(fn.__name__)
    return now_applied
