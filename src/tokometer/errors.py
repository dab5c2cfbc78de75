"""One exception tree. The CLI maps every `TokometerError` to one clear line and exit code 2."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence


class TokometerError(Exception):
    """Base of every error a user can cause; the message is meant for them."""

    exit_code = 2


_PARAMETER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


class InputError(TokometerError):
    """A value the user gave is out of range or inconsistent (negative size, zero bandwidth...).

    `field` is the parameter at fault (`"bits"`, `"tp"`), so a form can mark it without reading the
    text. The message names parameters as `{bits}`; `render(names)` spells them as the caller's user
    knows them (the CLI passes its flag names: `--bits`), and `str()` uses the parameter names.
    An input refused at a door (`tokometer.guard`) also says which door (`"catalog"`, `"trace"`,
    `"import"`, `"web"`...) and what was `expected`; its `field` is then a file and line or a JSON path.
    """

    def __init__(self, message: str, *, field: str | None = None, door: str | None = None, expected: str | None = None) -> None:
        self.field = field
        self.door = door
        self.expected = expected
        self.message = message
        super().__init__(self.render())

    def render(self, names: Mapping[str, str] | None = None) -> str:
        """The message with each `{parameter}` replaced by `names[parameter]` (default: the name itself)."""
        lookup = names or {}
        return _PARAMETER.sub(lambda m: lookup.get(m.group(1), m.group(1)), self.message)


class CatalogError(TokometerError):
    """A catalog file (shipped or user) is malformed: the message names the file and the key."""


class UnknownEntryError(TokometerError):
    """A name that no catalog entry (id or alias) matches; suggests the nearest ones."""

    def __init__(self, kind: str, name: str, candidates: Iterable[str], several: Sequence[str] = ()) -> None:
        self.kind = kind
        self.name = name
        if several:  # "DGX Spark,M4 Max": each part is an entry, but this command takes one
            self.suggestions = list(several)
            flag = SWEEP_FLAGS.get(kind)
            compare = f"; to compare them: `tokometer sweep {flag} {','.join(several)}`" if flag else ""
            super().__init__(
                f"{name!r} names {len(several)} {kind} entries ({', '.join(repr(s) for s in several)}): "
                f"one is expected here{compare}"
            )
            return
        pool = sorted({c for c in candidates if not c.startswith("~")})
        import difflib  # only an unknown name pays for it

        self.suggestions = difflib.get_close_matches(name.lower(), pool, n=3, cutoff=0.55)
        hint = f"; did you mean {', '.join(repr(s) for s in self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"unknown {kind} {name!r}{hint} (see `tokometer {kind_command(kind)} list`)")


SWEEP_FLAGS = {"hardware": "--hw", "model": "--model", "quantization": "-q"}  # `tokometer sweep`'s list options


class SimulationStalled(TokometerError):
    """The serving simulator's scheduler ran step after step without progress (a simulator bug, never
    a silent spin): names the engine, its memory rule, the scheduler's state and the workload."""

    def __init__(
        self, *, engine: str, rule: str, steps: int, clock_s: float, running: int, decoding: int, prefilling: int,
        waiting: int, kv_used_tokens: float, kv_capacity_tokens: float, workload: str,
    ) -> None:
        self.engine = engine
        self.rule = rule
        self.steps = steps
        self.running = running
        self.waiting = waiting
        self.kv_used_tokens = kv_used_tokens
        self.kv_capacity_tokens = kv_capacity_tokens
        self.workload = workload
        super().__init__(
            f"the {engine} scheduler ({rule}) made no progress in {steps:,} steps at t = {clock_s:.3f} s: "
            f"{running} running ({decoding} decoding, {prefilling} prefilling), {waiting} waiting, "
            f"KV cache {kv_used_tokens:,.0f} of {kv_capacity_tokens:,.0f} tokens in use; workload: {workload}. "
            "This is a simulator bug: please report this line"
        )


class IngestError(TokometerError):
    """A model file or config could not be read (truncated GGUF, bad safetensors header, bad JSON)."""


class BenchError(TokometerError):
    """A benchmark could not run (server unreachable, protocol not recognised)."""


def kind_command(kind: str) -> str:
    return {"hardware": "hardware", "model": "models", "quantization": "quants", "engine": "engines"}.get(
        kind, kind
    )


def require_positive(name: str, value: float | None) -> None:
    """Raise InputError on parameter `name` unless `value` is a finite number > 0 (None: not given)."""
    if value is None:
        return
    if not (value > 0) or value != value or value == float("inf"):
        raise InputError(f"{{{name}}} must be a positive number, got {value!r}", field=name)


def require_non_negative(name: str, value: float | None) -> None:
    if value is None:
        return
    if not (value >= 0) or value == float("inf"):
        raise InputError(f"{{{name}}} must be zero or more, got {value!r}", field=name)
