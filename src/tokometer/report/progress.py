"""Progress bars on stderr for long commands (`validate`, `calibrate`, `plan`, long `simulate` runs).

A bar shows only when stderr is a terminal and the command is not printing `--json`, so pipes, files
and machine-read output stay clean. tqdm draws it; it is imported only when a bar is drawn, never at
`import tokometer` time (the quick CLI paths do not pay for it). The use cases never import this
module: they take a `wrap` (iterable in, iterable out) or a `tick` callback, and the CLI passes
these in, or nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import Any, TypeVar

T = TypeVar("T")


def shown(as_json: bool = False) -> bool:
    """Whether a bar is drawn: stderr is a terminal and the output is not JSON."""
    if as_json:
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (ValueError, OSError):  # a closed or odd stream
        return False


def wrapper(desc: str, *, as_json: bool = False, unit: str = "it") -> Callable[[Iterable[Any]], Iterable[Any]] | None:
    """A function that wraps an iterable in a bar labelled `desc`, or None when no bar is shown."""
    if not shown(as_json):
        return None

    def wrap(items: Iterable[T]) -> Iterator[T]:
        from tqdm import tqdm

        total = len(items) if isinstance(items, Sized) else None
        with tqdm(items, desc=desc, total=total, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True) as bar:
            yield from bar

    return wrap


class Counter:
    """A bar advanced by a callback (`tick(done)`, `done` the running count), for loops the CLI does not own."""

    def __init__(self, desc: str, total: int | None, *, as_json: bool = False, unit: str = "it") -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.enabled = shown(as_json)
        self._bar: Any = None

    def __enter__(self) -> Counter:
        if self.enabled:
            from tqdm import tqdm

            self._bar = tqdm(desc=self.desc, total=self.total, unit=self.unit, file=sys.stderr, leave=False, dynamic_ncols=True)
        return self

    def tick(self, done: int) -> None:
        if self._bar is not None and done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
