"""Write a live run's requests to SQLite from a background thread, as they complete.

Why a thread: the benchmark's event loop must not wait on `fsync`, and a request's record is
built (its stream parsed) only after the request ends, so the parsing happens here too, away
from the loop that stamps other streams' bytes. What crosses over is a thunk: a function that
returns the request's stored dict when called.

Each batch (everything queued when the thread wakes, at most `BATCH_MAX`) is one transaction, so
a process killed at any moment leaves every committed request in the database and the run marked
`incomplete` (see `tokometer.store`). `flush()` waits until everything queued is written: the
runner calls it before each timed round, because parsing 256 finished streams in this thread
while the next round starts took TTFT from +6 % to +18 % at 256 streams. `close()` drains the
queue and joins the thread.

Open-loop runs (`--rate`, `--trace`) have no rounds to flush between: one timed window holds every
request, so a finished stream's parsing would compete for the interpreter with the streams still
being timed. There the runner calls `quiet(False)` while any request is in flight and `quiet(True)`
when none is, and the writer holds its parsing until a quiet moment; it never holds a row longer than
`HOLD_MAX_S` or past `BATCH_MAX` queued rows, so a killed run loses at most that much. At a rate
where streams always overlap there is no quiet moment, and the rows are written in those bounded
batches beside the timed streams.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tokometer.domain.heldbatch import BATCH_MAX, HOLD_MAX_S, STOP, HeldQueue, stopped
from tokometer.domain.runrecord import RunRecord
from tokometer.store import RunStore, StoreError

RowThunk = Callable[[], Mapping[str, Any]]


class RunWriter:
    """Owns one live run: `begin` at construction, `put` per finished request, `close` at the end."""

    def __init__(self, path: Path, header: RunRecord | None = None, *, run_id: int | None = None) -> None:
        """Begin a run from `header`, or add to the live run `run_id` (another process began it)."""
        self.path = path
        if header is not None:
            with RunStore(path) as store:
                self.run_id = store.begin_run(header)
        elif run_id is not None:
            self.run_id = run_id
        else:
            raise ValueError("RunWriter needs a header or a run_id")
        self.written = 0
        self.error: str | None = None
        self._held = HeldQueue()
        self._thread = threading.Thread(target=self._loop, name="tokometer-run-writer", daemon=True)
        self._thread.start()

    def put(self, make_row: RowThunk) -> None:
        self._held.put(make_row)

    def quiet(self, idle: bool) -> None:
        """No request is in flight (True: parse now), or one is (False: hold, within the bounds)."""
        self._held.quiet(idle)

    def flush(self) -> None:
        """Return once every request queued so far is written (or has failed to be)."""
        self._held.release()
        if self._thread.is_alive():
            self._held.queue.join()

    def close(self, timeout_s: float = 30.0) -> None:
        """Write what is queued and stop the thread."""
        self._held.stop()
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        try:
            store = RunStore(self.path)
        except StoreError as exc:
            self.error = str(exc)
            return
        with store:
            stop = False
            while not stop:
                items = self._held.next_batch()
                try:
                    self._write(store, items)
                finally:
                    self._held.done(items)
                stop = stopped(items)

    def _write(self, store: RunStore, items: list[object]) -> None:
        """Build the queued rows (parsing their streams) and store them in one transaction."""
        rows = []
        for item in items:
            if item is not STOP and callable(item):
                try:
                    rows.append(item())
                except Exception as exc:  # a record that cannot be built must not stop the others
                    self.error = f"a request could not be recorded: {exc}"
        if not rows:
            return
        try:
            store.add_requests(self.run_id, rows)
            self.written += len(rows)
        except StoreError as exc:  # keep measuring; the final save says what went wrong
            self.error = str(exc)


__all__ = ["BATCH_MAX", "HOLD_MAX_S", "RunWriter"]
