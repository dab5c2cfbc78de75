"""A queue of finished requests whose consumer thread holds them for a quiet moment, within bounds.

Both ends of a live run build and ship rows from a background thread: `store.writer.RunWriter`
(into SQLite) and the Ray worker's sink in `bench.distributed` (to the actor that writes them).
Parsing a finished stream competes for the interpreter with the streams still being timed, so
while any request is in flight (`quiet(False)`) the consumer holds, and it takes the batch when
none is, or once a row has waited `HOLD_MAX_S`, or once `BATCH_MAX` rows are queued; a killed run
loses at most that much. The bench must not import the store, so the rule lives here, below both.
"""

from __future__ import annotations

import queue
import threading

BATCH_MAX = 64  # rows taken in one batch (one transaction, one message)
HOLD_MAX_S = 2.0  # the longest a finished request waits for a quiet moment before it is taken
POLL_S = 0.05
STOP = object()  # put by `close`: the consumer takes what is queued and ends


class HeldQueue:
    """Producer side: `put`, `quiet`, `stop`; consumer side: `next_batch`, then `done` on it."""

    def __init__(self) -> None:
        self.queue: queue.Queue[object] = queue.Queue()
        self._quiet = threading.Event()
        self._quiet.set()

    def put(self, item: object) -> None:
        self.queue.put(item)

    def quiet(self, idle: bool) -> None:
        """No request is in flight (True: take rows now), or one is (False: hold, within the bounds)."""
        if idle:
            self._quiet.set()
        else:
            self._quiet.clear()

    def release(self) -> None:
        """Stop holding (before a flush or a close)."""
        self._quiet.set()

    def stop(self) -> None:
        self._quiet.set()
        self.queue.put(STOP)

    def next_batch(self) -> list[object]:
        """Block for one item, hold for a quiet moment (up to HOLD_MAX_S or BATCH_MAX queued), then
        take what else is queued, BATCH_MAX items at most."""
        items = [self.queue.get()]
        held_s = 0.0
        while not self._quiet.wait(POLL_S) and held_s < HOLD_MAX_S and self.queue.qsize() < BATCH_MAX:
            held_s += POLL_S
        while len(items) < BATCH_MAX:
            try:
                items.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return items

    def done(self, items: list[object]) -> None:
        """Mark a batch handled, so `queue.join()` (a flush) can return."""
        for _ in items:
            self.queue.task_done()


def stopped(items: list[object]) -> bool:
    return any(item is STOP for item in items)


__all__ = ["BATCH_MAX", "HOLD_MAX_S", "STOP", "HeldQueue", "stopped"]
