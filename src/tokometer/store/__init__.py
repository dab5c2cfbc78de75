"""Benchmark runs in SQLite: every run with its configuration, server identity, the raw token
timestamps of every request (so metrics can be recomputed) and the prediction it was graded against.

The database lives at `tokometer_home()/runs.db`; `TOKOMETER_HOME` moves it (tests point it at a
temporary directory). The schema comes from `store.migrations`. The database runs in WAL mode with
`synchronous=FULL`: each committed transaction survives a killed process and a power loss.

A live benchmark is written as it goes, so a run killed by any signal keeps every request that
completed: `begin_run` stores the header with status `incomplete`, `add_requests` appends
finished requests (one transaction per batch; `store.writer.RunWriter` does this from a thread),
`finish_run` writes the summary and the final status. A run still `incomplete` afterwards was
killed; its summary is recomputed from its stored requests when it is read.

    store = open_store()
    run_id = store.save_run(result_dict)     # a whole run at once (imports)
    store.list_runs(limit=50)   # newest first, summaries only (ListedRun)
    store.get_run(run_id)       # everything, requests included (RunRecord)

Reads are typed: `runrecord.RunRecord` and `ListedRun`, whose `to_dict()` is the JSON the CLI and the
web print.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tokometer.domain.runrecord import ListedRun, RunRecord
from tokometer.errors import TokometerError
from tokometer.guard import MAX_INT64
from tokometer.store.migrations import migrate, transaction

T = TypeVar("T")
DB_NAME = "runs.db"
_RUN_COLUMNS = (
    "started_at", "finished_at", "status", "source", "url", "model", "hardware", "mode", "protocol",
    "config_json", "server_json", "summary_json", "levels_json", "prediction_json", "grading_json",
    "notes_json", "tokometer_version", "frontier_json",
)
_LIST_COLUMNS = (
    "id, started_at, finished_at, status, source, url, model, hardware, mode, protocol, "
    "summary_json, prediction_json, grading_json"
)


class StoreError(TokometerError):
    """The runs database cannot be opened, read or written; `reason` says why in words."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        self.reason = reason or message
        super().__init__(message)


# SQLite's and the OS's words for why a write failed -> the reason as a user reads it
_REASONS = (
    (("disk is full", "no space left", "database or disk is full"), "the disk is full"),
    (("readonly", "read-only", "permission denied"), "the runs database is read-only"),
    (("database is locked", "database table is locked"), "the runs database is locked by another process"),
    (("unable to open", "cannot open"), "the runs database cannot be opened"),
    (("malformed", "not a database"), "the runs database is damaged"),
)


def store_reason(exc: BaseException) -> str:
    """Why a database operation failed, in words ("the disk is full"), from SQLite's or the OS's message."""
    text = str(exc).lower()
    return next((words for needles, words in _REASONS if any(n in text for n in needles)), str(exc))


def _failed(what: str, exc: BaseException) -> StoreError:
    reason = store_reason(exc)
    return StoreError(f"{what}: {reason}", reason)


class RunNotFound(StoreError):
    def __init__(self, run_id: object, path: Path) -> None:
        self.run_id = run_id
        shown = f"#{run_id}" if isinstance(run_id, int) else repr(run_id)[:40]
        super().__init__(f"no run {shown} in {path} (see `tokometer runs list`)")


def default_path() -> Path:
    from tokometer.catalog import tokometer_home

    return tokometer_home() / DB_NAME


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, allow_nan=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | set):
        return list(value)
    raise TypeError(f"cannot store {type(value).__name__}")


def _clean(value: Any) -> Any:
    """NaN and infinities are not JSON: store them as null."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _record(run: RunRecord | Mapping[str, Any]) -> RunRecord:
    """A run ready to store: typed, with NaN and infinities turned into null."""
    try:
        record = run if isinstance(run, RunRecord) else RunRecord.from_dict(run)
    except (TypeError, ValueError, KeyError) as exc:
        raise StoreError(f"not a run: {exc}") from None
    return RunRecord.from_dict(_clean(record.to_dict()))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def prediction_brief(prediction: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The headline of a stored prediction (without the full estimate)."""
    if not prediction:
        return None
    return {k: v for k, v in prediction.items() if k != "estimate"}


class RunStore:
    """A handle on the runs database; use as a context manager or call `close()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path), isolation_level=None, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA foreign_keys = ON")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            migrate(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise _failed(f"cannot open the runs database {path}", exc) from None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # --- writing -------------------------------------------------------------------------------

    def save_run(self, run: RunRecord | Mapping[str, Any]) -> int:
        """Insert one run and its requests in a single transaction; return its id."""
        record = _record(run)
        try:
            with transaction(self.db):
                run_id = self._insert_run(record)
                self._insert_requests(run_id, record.requests)
        except sqlite3.Error as exc:
            raise _failed(f"cannot save the run to {self.path}", exc) from None
        return run_id

    def begin_run(self, header: RunRecord) -> int:
        """Store a run that is starting (status `incomplete`, no summary yet); return its id."""
        try:
            with transaction(self.db):
                return self._insert_run(_record(header.with_(status="incomplete", requests=())))
        except sqlite3.Error as exc:
            raise _failed(f"cannot save the run to {self.path}", exc) from None

    def add_requests(self, run_id: int, requests: Sequence[Mapping[str, Any]]) -> None:
        """Append finished requests of a live run, all in one transaction."""
        try:
            with transaction(self.db):
                self._insert_requests(run_id, [_clean(dict(r)) for r in requests])
        except sqlite3.Error as exc:
            raise _failed(f"cannot save requests to {self.path}", exc) from None

    def finish_run(self, run_id: int, run: RunRecord) -> None:
        """Replace a live run's header and requests by the finished run, in one transaction."""
        run = _record(run)
        try:
            with transaction(self.db):
                self.db.execute(
                    f"UPDATE runs SET {', '.join(c + ' = ?' for c in _RUN_COLUMNS)} WHERE id = ?",
                    (*self._run_values(run), run_id),
                )
                self.db.execute("DELETE FROM requests WHERE run_id = ?", (run_id,))
                self._insert_requests(run_id, run.requests)
        except sqlite3.Error as exc:
            raise _failed(f"cannot save the run to {self.path}", exc) from None

    @staticmethod
    def _run_values(run: RunRecord) -> tuple[Any, ...]:
        from tokometer import __version__

        return (
            run.started_at,
            run.finished_at,
            run.status,
            run.source,
            run.url,
            run.model,
            run.hardware,
            run.mode,
            run.protocol,
            _dumps(run.config),
            _dumps(run.server),
            _dumps(run.summary.to_dict() if run.summary is not None else {}),
            _dumps([level.to_dict() for level in run.levels]),
            _dumps(run.prediction),
            _dumps(run.grading),
            _dumps(list(run.notes)),
            run.tokometer_version or __version__,
            _dumps(run.frontier),
        )

    def _insert_run(self, run: RunRecord) -> int:
        cursor = self.db.execute(
            f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * len(_RUN_COLUMNS))})",
            self._run_values(run),
        )
        return int(cursor.lastrowid or 0)

    def _insert_requests(self, run_id: int, requests: Sequence[Mapping[str, Any]]) -> None:
        self.db.executemany(
            """INSERT INTO requests (run_id, seq, phase, label, grp, ok, error_kind, error, t0_s,
               event_times_json, event_tokens_json, output_tokens, output_tokens_source,
               prompt_tokens, cached_tokens, finish_reason, server_timings_json, record_json)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [
                (
                    run_id,
                    r["seq"],
                    r["phase"],
                    r.get("label") or "",
                    r.get("group") or 0,
                    1 if r.get("ok") else 0,
                    r.get("error_kind"),
                    r.get("error"),
                    r.get("t0_s"),
                    _dumps(r.get("event_times_s")),
                    _dumps(r.get("event_tokens")),
                    r.get("output_tokens"),
                    r.get("output_tokens_source"),
                    r.get("prompt_tokens"),
                    r.get("cached_tokens"),
                    r.get("finish_reason"),
                    _dumps(r.get("server_timings")),
                    _dumps(r),
                )
                for r in requests
            ],
        )

    def delete_run(self, run_id: int) -> None:
        run_id = self._check_id(run_id)
        with transaction(self.db):
            deleted = self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount
        if not deleted:
            raise RunNotFound(run_id, self.path)

    # --- reading -------------------------------------------------------------------------------

    def _header(self, row: sqlite3.Row) -> dict[str, Any]:
        return {
            "id": row["id"],
            "started_at": row["started_at"],
            "finished_at": row["finished_at"],
            "status": row["status"],
            "source": row["source"],
            "url": row["url"],
            "model": row["model"],
            "hardware": row["hardware"],
            "mode": row["mode"],
            "protocol": row["protocol"],
            "summary": _loads(row["summary_json"]) or {},
            "grading": _loads(row["grading_json"]),
        }

    def _typed(self, build: Callable[[dict[str, Any]], T], data: dict[str, Any]) -> T:
        """A stored run as its type; a row no type accepts is a store error naming the run."""
        try:
            return build(data)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise StoreError(f"run #{data.get('id')} in {self.path} cannot be read: {exc}") from None

    def list_runs(self, limit: int = 50, *, model: str | None = None, offset: int = 0) -> list[ListedRun]:
        """Newest first: id, when, where, what, summary, prediction headline, grading."""
        limit, offset = min(limit, MAX_INT64), min(max(offset, 0), MAX_INT64)  # SQLite binds 64-bit integers only
        try:
            if model:
                rows = self.db.execute(
                    f"SELECT {_LIST_COLUMNS} FROM runs WHERE model = ? ORDER BY id DESC LIMIT ? OFFSET ?",
                    (model, limit, offset),
                )
            else:
                rows = self.db.execute(
                    f"SELECT {_LIST_COLUMNS} FROM runs ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)
                )
            found = [{**self._header(row), "prediction": prediction_brief(_loads(row["prediction_json"]))} for row in rows]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return [self._typed(ListedRun.from_dict, data) for data in found]

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def _check_id(self, run_id: object) -> int:
        """Run ids are positive SQLite integers; anything else is simply not there."""
        if isinstance(run_id, bool) or not isinstance(run_id, int) or not 0 < run_id < 2**63:
            raise RunNotFound(run_id, self.path)
        return run_id

    def count_requests(self, run_id: int) -> int:
        self._check_id(run_id)
        return int(self.db.execute("SELECT COUNT(*) FROM requests WHERE run_id = ?", (run_id,)).fetchone()[0])

    def get_run(
        self, run_id: int, *, with_requests: bool = True, requests_limit: int | None = None, requests_offset: int = 0
    ) -> RunRecord:
        """One run in full: configuration, server identity, summary, levels, prediction, requests
        (all of them, or `requests_limit` from `requests_offset` in order, for large runs)."""
        run_id = self._check_id(run_id)
        try:
            row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(run_id, self.path)
            run = self._header(row)
            run["prediction"] = _loads(row["prediction_json"])
            run["config"] = _loads(row["config_json"]) or {}
            run["server"] = _loads(row["server_json"])
            run["levels"] = _loads(row["levels_json"]) or []
            run["notes"] = _loads(row["notes_json"]) or []
            run["tokometer_version"] = row["tokometer_version"]
            run["frontier"] = _loads(row["frontier_json"])
            if with_requests:
                run["requests"] = [
                    json.loads(r["record_json"])
                    for r in self.db.execute(
                        "SELECT record_json FROM requests WHERE run_id = ? ORDER BY seq LIMIT ? OFFSET ?",
                        (run_id, -1 if requests_limit is None else requests_limit, max(0, requests_offset)),
                    )
                ]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return self._typed(RunRecord.from_dict, run)

    def get_runs(self, run_ids: Sequence[int], *, with_requests: bool = True) -> list[RunRecord]:
        return [self.get_run(i, with_requests=with_requests) for i in run_ids]

    def schema(self) -> str:
        return "\n".join(r[0] + ";" for r in self.db.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"))


def open_store(path: str | Path | None = None) -> RunStore:
    """Open (creating and migrating if needed) the runs database; default `tokometer_home()/runs.db`."""
    return RunStore(Path(path) if path is not None else default_path())


__all__ = ["RunNotFound", "RunStore", "StoreError", "default_path", "open_store"]
