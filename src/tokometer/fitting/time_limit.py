"""A wall-time limit for one simulated run, as the `check` callback the serving simulator calls.

`tokometer validate` gives every simulated run (the rows that share a setup) a few seconds; a run
past it is stopped from inside the simulator's event loop and its rows are unscored with the reason,
so one run that does not end cannot hang a whole file.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tokometer.errors import TokometerError


class TimeLimitError(TokometerError):
    """A simulated run went past the caller's time limit."""


def time_limit(seconds: float | None) -> Callable[[int], None] | None:
    """A `check` for the simulator that raises `TimeLimitError` once `seconds` of wall time have passed."""
    if seconds is None:
        return None
    end = time.monotonic() + seconds

    def check(_routed: int) -> None:
        if time.monotonic() > end:
            raise TimeLimitError(f"simulation ran past the {seconds:g} s time limit per run (--time-limit)")

    return check
