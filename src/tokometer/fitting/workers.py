"""Independent pieces of a fit or a validation (the folds of a hold-out, the simulated runs of a serving
file) run side by side in processes, one per usable core.

`fork_map(fn, n)` is `[fn(0), ..., fn(n - 1)]`. On Linux the workers are forked from the caller, so `fn`
and everything it reads (the rows, a closure over a fitted table) are inherited, not pickled, and no
importable `__main__` is needed (a script without a main guard, a notebook); only each result travels
back, pickled. Elsewhere, with one task or one core, or inside a worker, it runs in this process.
The results are the same either way, in the tasks' order. `TOKOMETER_FIT_WORKERS=N` sets the count
(`1`: always in this process).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
FIT_WORKERS_ENV = "TOKOMETER_FIT_WORKERS"
_JOB: dict[str, Any] = {}


def fit_workers(n_tasks: int) -> int:
    """Processes for `n_tasks` independent tasks: `TOKOMETER_FIT_WORKERS` if set, else one per usable core,
    never more than the tasks; 1 inside a worker (no pool within a pool) or with an unreadable setting."""
    if _JOB.get("in_worker"):
        return 1
    raw = os.environ.get(FIT_WORKERS_ENV, "").strip()
    try:
        wanted = int(raw) if raw else len(os.sched_getaffinity(0))
    except ValueError:
        wanted = 1
    except AttributeError:  # no sched_getaffinity (macOS)
        wanted = os.cpu_count() or 1
    return max(1, min(wanted, n_tasks))


def fork_map(fn: Callable[[int], T], n_tasks: int) -> list[T]:
    """`[fn(i) for i in range(n_tasks)]`, in forked worker processes where that can help (module docstring)."""
    workers = fit_workers(n_tasks)
    if workers <= 1 or not sys.platform.startswith("linux"):
        return [fn(i) for i in range(n_tasks)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _JOB["fn"] = fn  # read by the forked workers (`_run`), which start inside the `with` below
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_run, range(n_tasks)))
    finally:
        _JOB.clear()


def _run(index: int) -> Any:
    _JOB["in_worker"] = True
    return _JOB["fn"](index)
