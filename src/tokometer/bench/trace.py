"""Read a request trace to replay: when each request arrives, how long its prompt and its output are.

`tokometer bench URL --trace FILE` sends each request at its arrival time with a prompt of its
length and `max_tokens` of its output length, so a measured run and a simulated one can be
compared on the same workload. Two formats, told apart by the file's content:

- CSV with a header. The Azure LLM inference trace columns `TIMESTAMP,ContextTokens,GeneratedTokens`
  (TIMESTAMP a date-time such as `2023-11-16 18:15:46.6805900`, or seconds), or the generic
  `arrival_s,prompt_tokens,output_tokens`.
- JSON Lines, one object per request, with the same generic keys (or `timestamp`,
  `input_length`/`output_length`, as several simulators write them).

Arrival times are made relative to the first request and sorted. Pure: text in, requests out; a
bad row is an `InputError` naming its line. (The serving simulator will read the same formats;
the lead unifies the two readers when both branches land.)
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tokometer.errors import InputError

MAX_TRACE_REQUESTS = 1_000_000
# A prompt or an output of ten million tokens is ten times the longest context any model takes.
MAX_TOKENS_PER_REQUEST = 10_000_000
# A million requests of CSV are about 40 MB; a trace file over 256 MiB is not a trace we can replay.
MAX_TRACE_BYTES = 256 << 20


def read_trace_text(path: str | Path) -> str:
    """A trace or length file through the guarded door: a regular UTF-8 file of at most `MAX_TRACE_BYTES`
    (a FIFO or `/dev/zero` is refused at once instead of hanging `simulate` and `bench`)."""
    from tokometer.guard import read_text

    return read_text(path, door="trace", limit_bytes=MAX_TRACE_BYTES, what="a UTF-8 CSV or JSON Lines trace")

_TIME_KEYS = ("arrival_s", "TIMESTAMP", "timestamp", "arrival_time", "time_s")
_PROMPT_KEYS = ("prompt_tokens", "ContextTokens", "input_length", "input_tokens", "context_tokens")
_OUTPUT_KEYS = ("output_tokens", "GeneratedTokens", "output_length", "generated_tokens")


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: seconds after the first arrival, prompt and output lengths in tokens."""

    arrival_s: float
    prompt_tokens: int
    output_tokens: int


def _pick(row: Mapping[str, Any], keys: tuple[str, ...], what: str, where: str) -> Any:
    for key in keys:
        if key in row and row[key] not in (None, ""):
            return row[key]
    raise InputError(f"{where}: no {what} column (one of {', '.join(keys)})")


def _time_s(value: Any, where: str) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                # Azure traces carry 7 fractional digits; fromisoformat takes at most 6
                head, _, fraction = text.partition(".")
                stamp = datetime.fromisoformat(head.replace(" ", "T"))
                seconds = stamp.timestamp() + (float("0." + fraction) if fraction.isdigit() else 0.0)
            except ValueError:
                raise InputError(f"{where}: arrival time {text[:40]!r} is neither seconds nor a date-time") from None
    if not math.isfinite(seconds):
        raise InputError(f"{where}: arrival time {value!r} is not finite")
    return seconds


def _tokens(value: Any, what: str, where: str, *, minimum: int) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {what} {value!r} is not a number") from None
    if not math.isfinite(number) or not number.is_integer() or not minimum <= number <= MAX_TOKENS_PER_REQUEST:
        raise InputError(f"{where}: {what} {value!r} must be a whole number from {minimum} to {MAX_TOKENS_PER_REQUEST:,}")
    return int(number)


def _request(row: Mapping[str, Any], where: str) -> tuple[float, int, int]:
    arrival = _time_s(_pick(row, _TIME_KEYS, "arrival time", where), where)
    prompt = _tokens(_pick(row, _PROMPT_KEYS, "prompt length", where), "prompt length", where, minimum=0)
    output = _tokens(_pick(row, _OUTPUT_KEYS, "output length", where), "output length", where, minimum=1)
    return arrival, prompt, output


def parse_trace(text: str, name: str = "trace") -> tuple[TraceRequest, ...]:
    """The requests of a CSV or JSONL trace, sorted by arrival, times relative to the first."""
    stripped = text.lstrip()
    rows: list[tuple[float, int, int]] = []
    if stripped.startswith("{"):
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                raise InputError(f"{name} line {number}: not JSON") from None
            if not isinstance(obj, dict):
                raise InputError(f"{name} line {number}: expected a JSON object")
            rows.append(_request(obj, f"{name} line {number}"))
            if len(rows) > MAX_TRACE_REQUESTS:
                raise InputError(f"{name}: more than {MAX_TRACE_REQUESTS:,} requests")
    else:
        reader = csv.DictReader(io.StringIO(text))
        try:
            if not reader.fieldnames:
                raise InputError(f"{name}: empty (expected CSV with a header, or JSON Lines)")
            reader.fieldnames = [f.strip() for f in reader.fieldnames]
            for number, row in enumerate(reader, 2):
                rows.append(_request(row, f"{name} line {number}"))
                if len(rows) > MAX_TRACE_REQUESTS:
                    raise InputError(f"{name}: more than {MAX_TRACE_REQUESTS:,} requests")
        except csv.Error as exc:  # a field over csv's 128 KiB limit, a NUL byte...
            raise InputError(f"{name} line {reader.line_num}: not CSV ({exc})", field=f"{name}:{reader.line_num}", door="trace") from None
    if not rows:
        raise InputError(f"{name}: no requests")
    rows.sort(key=lambda r: r[0])
    first = rows[0][0]
    return tuple(TraceRequest(round(t - first, 6), p, o) for t, p, o in rows)


__all__ = ["MAX_TOKENS_PER_REQUEST", "MAX_TRACE_BYTES", "TraceRequest", "parse_trace", "read_trace_text"]
