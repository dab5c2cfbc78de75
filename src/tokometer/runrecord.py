"""A benchmark run as a typed value: what the runner produces, the store keeps and the views read.

It lives at the bottom of the house, next to `specs`, because three layers share it: `bench`
builds it, `store` writes and reads it, `usecases`, `report` and `web` show it; none of them may
import another for it (the store does not import the bench). It is plain data: no I/O, no
formulas. The closed sets (status, mode, phase, failure kind, source) are `Literal` types, so a
misspelt status is a type error rather than a run that no view recognises.

The request rows stay JSON objects (`RequestRow`): their shape is `bench.client.RequestRecord.to_dict`,
and they are kept verbatim so every metric can be recomputed from the stored timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

RunStatus = Literal["complete", "interrupted", "deadline", "failed", "incomplete"]
RunMode = Literal["speed", "depth", "concurrency", "rate", "trace"]
Phase = Literal["cold", "decode", "ttft", "depth", "concurrency", "rate", "trace", "combined"]
FailureKind = Literal[
    "connect", "dropped", "empty", "html", "http", "implausible", "imported", "invalid", "line-too-long", "malformed",
    "overrun", "redirect", "server-error", "stall", "timeout", "too-large", "truncated",
]
RunSource = Literal["tokometer", "llama-bench", "vllm-bench", "tokometer-export"]
RequestRow = dict[str, Any]

RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)


@dataclass(frozen=True)
class RunRecord:
    """One run: header, configuration, server identity, summary, prediction, grade, requests."""

    started_at: str  # fields in the order of `tokometer bench --json`, which this shape keeps
    finished_at: str | None = None
    status: RunStatus = "complete"
    url: str | None = None
    model: str | None = None
    mode: str = "speed"  # RunMode for tokometer runs; importers keep the tool's own word
    protocol: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    levels: list[dict[str, Any]] = field(default_factory=list)
    notes: tuple[str, ...] = ()
    definitions: dict[str, str] = field(default_factory=dict)  # the metric formulas, for readers of the JSON
    requests: tuple[RequestRow, ...] = ()
    prediction: dict[str, Any] | None = None
    hardware: str | None = None
    grading: dict[str, Any] | None = None
    source: str = "tokometer"
    id: int | None = None
    tokometer_version: str | None = None  # set on stored runs only

    def with_(self, **changes: Any) -> RunRecord:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a run (`--json`, the web API, exports)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["notes"] = list(self.notes)
        data["requests"] = list(self.requests)
        if self.tokometer_version is None:
            del data["tokometer_version"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """From the JSON shape (unknown keys are ignored; a bad status is an error)."""
        status = data.get("status") or "complete"
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r} (known: {', '.join(RUN_STATUSES)})")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["status"] = status
        values["mode"] = str(data.get("mode") or "speed")
        values["source"] = str(data.get("source") or "tokometer")
        values["notes"] = tuple(str(n) for n in data.get("notes") or ())
        values["requests"] = tuple(dict(r) for r in data.get("requests") or ())
        values["config"] = dict(data.get("config") or {})
        values["summary"] = dict(data.get("summary") or {})
        values["levels"] = list(data.get("levels") or [])
        return cls(**values)


__all__ = [
    "FAILURE_KINDS", "RUN_STATUSES", "FailureKind", "Phase", "RequestRow", "RunMode", "RunRecord", "RunSource",
    "RunStatus",
]
