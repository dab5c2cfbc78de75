"""The one splitter: which rows train and which are held out, by a named group or in k folds.

`leave_one_group_out(items, group_of)` yields one fold per group (hardware, source, device family,
engine build), each test fold holding every item of its group and its training fold none of them;
`k_fold` splits items in k interleaved folds; `group_k_fold` holds out whole groups, k folds of them
(the cheap form of leave-one-group-out that bands use inside a cross-validation). `GROUPS` names the groupings `validate` reports. Items
are anything (measurement rows, features, serving runs): the caller says how to group them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Fold(Generic[T]):
    """One split: `group` held out, `train` without any of its items, `test` all of them."""

    group: str
    train: tuple[T, ...]
    test: tuple[T, ...]


def leave_one_group_out(
    items: Sequence[T], group_of: Callable[[T], Hashable | None]
) -> Iterator[Fold[T]]:
    """One fold per group, in sorted order; an item whose group is None is trained on, never held out."""
    groups: dict[str, list[T]] = {}
    keys = [group_of(item) for item in items]
    for item, key in zip(items, keys, strict=True):
        if key is not None:
            groups.setdefault(str(key), []).append(item)
    for name in sorted(groups):
        train = tuple(
            item for item, key in zip(items, keys, strict=True) if key is None or str(key) != name
        )
        yield Fold(name, train, tuple(groups[name]))


def k_fold(items: Sequence[T], k: int) -> Iterator[Fold[T]]:
    """k interleaved folds (item i in fold i mod k): deterministic, each item tested once."""
    if k < 2:
        raise ValueError("k-fold needs k >= 2")
    for fold in range(k):
        yield Fold(
            f"fold {fold + 1} of {k}",
            tuple(item for i, item in enumerate(items) if i % k != fold),
            tuple(item for i, item in enumerate(items) if i % k == fold),
        )


def group_k_fold(items: Sequence[T], group_of: Callable[[T], Hashable | None], k: int) -> Iterator[Fold[T]]:
    """Whole groups held out, the sorted groups dealt into k folds (group i in fold i mod k); an item
    whose group is None is always trained on. With k >= the number of groups it is leave-one-group-out."""
    if k < 2:
        raise ValueError("group k-fold needs k >= 2")
    keys = [group_of(item) for item in items]
    names = sorted({str(key) for key in keys if key is not None})
    fold_of = {name: i % k for i, name in enumerate(names)}
    for fold in range(min(k, len(names))):
        held = {name for name, f in fold_of.items() if f == fold}
        yield Fold(
            ", ".join(sorted(held)),
            tuple(item for item, key in zip(items, keys, strict=True) if key is None or str(key) not in held),
            tuple(item for item, key in zip(items, keys, strict=True) if key is not None and str(key) in held),
        )
