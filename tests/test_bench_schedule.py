"""The open-loop lane pool: a lane is reused only while its connection is open, and the writer
is told exactly when the requests in flight leave and reach zero."""

from __future__ import annotations

from typing import cast

from tokometer.bench.schedule import LanePool
from tokometer.bench.wire import Lane


class FakeLane:
    def __init__(self) -> None:
        self.connected = True
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_a_lane_is_reused_while_connected_and_the_writer_hears_each_quiet_spell() -> None:
    opened: list[FakeLane] = []
    quiet: list[bool] = []

    def open_lane() -> Lane:
        opened.append(FakeLane())
        return cast(Lane, opened[-1])

    pool = LanePool(open_lane, quiet.append)
    first, second = pool.take(), pool.take()
    assert len(opened) == 2 and quiet == [False]
    opened[1].connected = False  # the server closed the second connection
    pool.give_back(second)
    pool.give_back(first)
    assert opened[1].closed and not opened[0].closed
    assert quiet == [False, True] and pool.in_flight == 0
    assert pool.take() is first  # the idle, connected lane: no new connection
    assert len(opened) == 2 and quiet == [False, True, False]
