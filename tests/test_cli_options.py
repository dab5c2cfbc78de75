"""Every command declares each option once: a merge that adds a flag twice makes click warn on every call."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import click

from tokometer.cli import cli


def _commands(group: click.Command, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    yield prefix or "tokometer", group
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            yield from _commands(sub, f"{prefix} {name}".strip())


def test_no_command_declares_an_option_twice() -> None:
    repeated = {}
    for name, command in _commands(cli):
        flags = Counter(flag for p in command.params for flag in getattr(p, "opts", []) + getattr(p, "secondary_opts", []))
        twice = sorted(f for f, n in flags.items() if n > 1)
        if twice:
            repeated[name] = twice
    assert not repeated, repeated


def test_the_check_sees_a_repeated_option() -> None:
    @click.command()
    @click.option("--ep", type=int)
    @click.option("--ep", type=int)
    def twice(ep: int) -> None: ...

    flags = Counter(flag for p in twice.params for flag in getattr(p, "opts", []))
    assert flags["--ep"] == 2
