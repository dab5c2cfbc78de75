"""Send one streaming request, stamp every chunk on arrival, and turn the bytes into a record.

The hot loop only does `clock()`, `list.append` and a few C-level byte scans per chunk
(tugot17/tokenomics#16: stamp the clock the instant a chunk lands, before any parsing). The scans
enforce the limits that keep a hostile server from holding the run: a line longer than
`Limits.line_bytes`, a response larger than `Limits.response_bytes`, and more events than
`max_tokens` allows (a server that ignores `max_tokens`) stop the reading, and the request fails
with a named reason (`line-too-long`, `too-large`, `overrun`). An HTML page and a redirect get
their own reasons too (`html`, `redirect`). Framing, JSON and counting happen in
`build_record`, after the stream has ended, and are pure, so tests feed it fake chunks.

The HTTP transport and the clock are parameters: `httpx.MockTransport` and a fake clock in unit
tests, a real connection pool and `time.perf_counter` in use. Failures (refused, dropped, HTTP
errors, errors inside a 200 stream, malformed JSON, stalls, total timeouts) become a record with
`ok=False` and the reason; whatever arrived before the failure is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, cast

import httpx

from tokometer.bench.metrics import RequestMetrics, Trace, request_metrics
from tokometer.bench.plausibility import implausible
from tokometer.bench.protocols import Parsed, Protocol, server_counts
from tokometer.bench.sse import Chunk, parse_stream
from tokometer.runrecord import FailureKind, Phase

Clock = Callable[[], float]
DONE_DRAIN_S = 2.0  # after the end marker, wait at most this long for the stream to close
EVENT_SLACK = 16  # events a stream may carry beyond max_tokens: role prelude, finish, usage, [DONE]...


@dataclass(frozen=True)
class Limits:
    """What one response may send before the client stops reading it."""

    line_bytes: int = 1 << 20  # one SSE/NDJSON line (a token event is ~100-300 bytes)
    response_bytes: int = 64 << 20  # the whole body


class _JsonLimit(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _JsonLimit(f"the server sent {name}, which is not a number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _JsonLimit(f"the server sent {text[:20]}, which is not a finite number")
    return value


def decode_event(text: str) -> tuple[Any, str | None]:
    """JSON of one event, or (None, why not): NaN, Infinity, 1e999 and deep nesting are refused."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float), None
    except _JsonLimit as exc:
        return None, str(exc)
    except RecursionError:
        return None, "an event is nested too deeply to read"
    except ValueError:
        return None, f"malformed JSON in the stream: {text[:80]!r}"


@dataclass(frozen=True)
class RequestRecord:
    """Everything one request left behind; times are absolute client-clock seconds."""

    seq: int
    phase: Phase
    label: str
    ok: bool
    t0: float
    group: int = 0  # round within a level (concurrency: requests launched together)
    error: str | None = None
    error_kind: FailureKind | None = None
    status_code: int | None = None
    t_headers: float | None = None
    t_end: float | None = None
    event_times: tuple[float, ...] = ()
    event_tokens: tuple[int, ...] | None = None
    events_total: int = 0
    output_tokens: int | None = None
    output_tokens_source: str = "events"
    prompt_tokens: int | None = None
    prompt_tokens_source: str | None = None  # server | tokenize (the server's /tokenize, after the run)
    cached_tokens: int | None = None
    finish_reason: str | None = None
    max_tokens: int | None = None
    ignore_eos: bool = False
    text_chars: int = 0
    usage: dict[str, Any] | None = None
    server_timings: dict[str, Any] | None = None
    server_decode_tps: float | None = None
    server_reported_decode_tps: float | None = None
    server_prefill_ms: float | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def trace(self) -> Trace:
        return Trace(
            t0_s=self.t0,
            event_times_s=self.event_times,
            output_tokens=self.output_tokens,
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            event_tokens=self.event_tokens,
        )

    def metrics(self) -> RequestMetrics:
        """The request's figures from its timestamps; a request of 2 or more tokens whose tokens the
        client saw arrive at one instant (one event, or one read: a queued stream, a proxy that
        buffers) has no client-side decode time, so its decode rate is the server's own, when the
        server reported its timings (llama.cpp, vLLM's usage stats)."""
        found = request_metrics(self.trace())
        if found.decode_tps is None and found.output_tokens >= 2 and self.server_decode_tps:
            rate = float(self.server_decode_tps)
            return replace(found, decode_tps=rate, tpot_ms=1000.0 / rate)
        return found

    @property
    def ended_early(self) -> bool:
        """Fewer tokens than asked for: the server stopped on EOS or a stop word."""
        if not self.ok or self.max_tokens is None or self.output_tokens is None:
            return False
        return self.output_tokens < self.max_tokens and self.finish_reason != "length"

    def to_dict(self) -> dict[str, Any]:
        """Stored shape: times relative to t0 (`t0_s` kept for ordering requests in time)."""
        data = asdict(self)
        t0 = self.t0
        data["t0_s"] = t0
        del data["t0"]
        data["t_headers_s"] = None if self.t_headers is None else self.t_headers - t0
        data["t_end_s"] = None if self.t_end is None else self.t_end - t0
        del data["t_headers"], data["t_end"]
        data["event_times_s"] = [t - t0 for t in self.event_times]
        del data["event_times"]
        data["event_tokens"] = list(self.event_tokens) if self.event_tokens is not None else None
        data["metrics"] = self.metrics().to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestRecord:
        t0 = float(data.get("t0_s") or 0.0)

        def absolute(key: str) -> float | None:
            value = data.get(key)
            return None if value is None else t0 + float(value)

        tokens = data.get("event_tokens")
        return cls(
            seq=int(data["seq"]),
            phase=cast(Phase, str(data["phase"])),
            label=str(data.get("label") or ""),
            ok=bool(data["ok"]),
            t0=t0,
            group=int(data.get("group") or 0),
            error=data.get("error"),
            error_kind=cast("FailureKind | None", data.get("error_kind")),
            status_code=data.get("status_code"),
            t_headers=absolute("t_headers_s"),
            t_end=absolute("t_end_s"),
            event_times=tuple(t0 + float(t) for t in data.get("event_times_s") or ()),
            event_tokens=tuple(int(k) for k in tokens) if tokens is not None else None,
            events_total=int(data.get("events_total") or 0),
            output_tokens=data.get("output_tokens"),
            output_tokens_source=str(data.get("output_tokens_source") or "events"),
            prompt_tokens=data.get("prompt_tokens"),
            prompt_tokens_source=data.get("prompt_tokens_source"),
            cached_tokens=data.get("cached_tokens"),
            finish_reason=data.get("finish_reason"),
            max_tokens=data.get("max_tokens"),
            ignore_eos=bool(data.get("ignore_eos")),
            text_chars=int(data.get("text_chars") or 0),
            usage=data.get("usage"),
            server_timings=data.get("server_timings"),
            server_decode_tps=data.get("server_decode_tps"),
            server_reported_decode_tps=data.get("server_reported_decode_tps"),
            server_prefill_ms=data.get("server_prefill_ms"),
            params=dict(data.get("params") or {}),
        )


def _done_markers(protocol: Protocol) -> tuple[bytes, ...]:
    """Bytes that end a stream, checked on raw chunks (a marker split across reads is just missed:
    the stream then ends when the server closes it). Quotes inside generated text are escaped, so
    `"done":true` cannot come from the model; a literal `data: [DONE]` in the text only starts the
    bounded drain early."""
    if protocol.name == "ollama":
        return (b'"done":true',)
    if protocol.name == "llamacpp":
        return (b'"stop":true',)
    return (b"data: [DONE]", b"data:[DONE]")


def build_record(
    protocol: Protocol,
    chunks: list[Chunk],
    *,
    seq: int,
    phase: Phase,
    label: str,
    t0: float,
    group: int = 0,
    t_headers: float | None = None,
    t_end: float | None = None,
    status_code: int | None = 200,
    failure: tuple[FailureKind, str] | None = None,
    max_tokens: int | None = None,
    ignore_eos: bool = False,
    params: dict[str, Any] | None = None,
) -> RequestRecord:
    """Parse the stream's chunks into a record: token events, counts, finish reason, errors."""
    error_kind: FailureKind | None
    error: str | None
    error_kind, error = failure if failure else (None, None)
    token_times: list[float] = []
    cumulative: list[int | None] = []
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    finish: str | None = None
    done = False
    text_chars = 0
    events = parse_stream(chunks, protocol.framing)
    for event in events:
        if event.data.strip() == "[DONE]":
            done = True
            continue
        obj, why = decode_event(event.data)
        if why is not None:
            if error is None:
                error_kind, error = ("malformed" if why.startswith("malformed") else "invalid"), why
            continue
        parsed: Parsed = protocol.parse(obj)
        if parsed.invalid is not None:
            if error is None or error_kind in ("truncated", "dropped"):
                error_kind, error = "invalid", f"the server sent an invalid value: {parsed.invalid}"
            continue
        if parsed.error is not None:
            if error is None or error_kind in ("truncated", "dropped"):
                error_kind, error = "server-error", f"server error inside the stream: {parsed.error}"
            continue
        if parsed.usage:
            usage = parsed.usage
        if parsed.timings:
            timings = parsed.timings
        if parsed.finish_reason:
            finish = parsed.finish_reason
        done = done or parsed.done
        if parsed.is_token:
            token_times.append(event.t_s)
            text_chars += len(parsed.text)
            running = parsed.usage.get("completion_tokens") if parsed.usage else None
            cumulative.append(int(running) if isinstance(running, int | float) else None)
    if error is None and not done and finish is None:
        error_kind, error = "truncated", "the stream ended before the server said it was done (connection dropped?)"
    if error is None and not token_times:
        error_kind, error = "empty", "the stream carried no generated tokens"
    counts = server_counts(usage, timings, len(token_times))
    event_tokens: tuple[int, ...] | None = None
    if cumulative and all(c is not None for c in cumulative):
        previous = 0
        steps = []
        for c in cumulative:
            assert c is not None
            steps.append(c - previous)
            previous = c
        event_tokens = tuple(steps)
    output_tokens = counts.output_tokens if token_times or counts.output_tokens_source != "events" else None
    if error is None:
        why = implausible(
            t0_s=t0,
            t_headers_s=t_headers,
            event_times_s=token_times,
            event_tokens=event_tokens,
            output_tokens=output_tokens,
            output_tokens_source=counts.output_tokens_source,
            text_chars=text_chars,
            max_tokens=max_tokens,
        )
        if why is not None:
            error_kind, error = "implausible", why
    return RequestRecord(
        seq=seq,
        phase=phase,
        label=label,
        ok=error is None,
        t0=t0,
        group=group,
        error=error,
        error_kind=error_kind,
        status_code=status_code,
        t_headers=t_headers,
        t_end=t_end,
        event_times=tuple(token_times),
        event_tokens=event_tokens,
        events_total=len(events),
        output_tokens=output_tokens,
        output_tokens_source=counts.output_tokens_source,
        prompt_tokens=counts.prompt_tokens,
        prompt_tokens_source="server" if counts.prompt_tokens is not None else None,
        cached_tokens=counts.cached_tokens,
        finish_reason=finish,
        max_tokens=max_tokens,
        ignore_eos=ignore_eos,
        text_chars=text_chars,
        usage=usage,
        server_timings=timings,
        server_decode_tps=counts.server_decode_tps,
        server_reported_decode_tps=counts.server_reported_decode_tps,
        server_prefill_ms=counts.server_prefill_ms,
        params=params or {},
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


@dataclass
class Exchange:
    """The raw result of one request: timestamped chunks, not yet parsed (parsing is off the timed path)."""

    protocol: Protocol
    seq: int
    phase: Phase
    label: str
    t0: float
    t_headers: float | None
    t_end: float
    status_code: int | None
    chunks: list[Chunk]
    failure: tuple[FailureKind, str] | None
    max_tokens: int | None
    ignore_eos: bool
    params: dict[str, Any]
    group: int = 0
    prompt: str | None = field(default=None, repr=False)  # kept for counting tokens, never stored

    def record(self) -> RequestRecord:
        return build_record(
            self.protocol,
            self.chunks,
            seq=self.seq,
            phase=self.phase,
            label=self.label,
            t0=self.t0,
            group=self.group,
            t_headers=self.t_headers,
            t_end=self.t_end,
            status_code=self.status_code,
            failure=self.failure,
            max_tokens=self.max_tokens,
            ignore_eos=self.ignore_eos,
            params=self.params,
        )


async def send_streaming(
    client: httpx.AsyncClient,
    url: str,
    protocol: Protocol,
    body: dict[str, Any],
    *,
    seq: int,
    phase: Phase,
    label: str,
    clock: Clock,
    headers: Mapping[str, str] | None = None,
    stall_timeout_s: float = 300.0,
    total_timeout_s: float | None = None,
    max_tokens: int | None = None,
    ignore_eos: bool = False,
    group: int = 0,
    limits: Limits | None = None,
) -> Exchange:
    """POST `body` and read the stream chunk by chunk; never raises for I/O failures.

    Returns the raw exchange; call `.record()` once the timed part of the run is over.
    """
    content = json.dumps(body).encode()
    request = client.build_request(
        "POST",
        url,
        content=content,
        headers={"content-type": "application/json", "accept-encoding": "identity", **(headers or {})},
        timeout=httpx.Timeout(stall_timeout_s, connect=min(stall_timeout_s, 30.0)),
    )
    chunks: list[Chunk] = []
    status: int | None = None
    t_headers: float | None = None
    failure: tuple[FailureKind, str] | None = None
    params = {k: v for k, v in body.items() if k not in ("prompt", "messages")}
    t0 = clock()
    try:
        async with asyncio.timeout(total_timeout_s):
            response = await client.send(request, stream=True)
            try:
                t_headers = clock()
                status = response.status_code
                if status >= 400:
                    detail = (await _head(response, 300)).decode("utf-8", "replace").strip()
                    failure = ("http", f"HTTP {status}" + (f": {detail}" if detail else ""))
                elif 300 <= status < 400:
                    where = response.headers.get("location") or "an unnamed place"
                    failure = ("redirect", f"HTTP {status} redirect to {where[:200]}: give that URL (redirects are not followed)")
                elif response.headers.get("content-type", "").lower().startswith("text/html"):
                    failure = ("html", f"the server answered HTTP {status} with an HTML page, not a token stream (wrong URL, or a login or proxy page?)")
                elif response.is_stream_consumed:  # the body was read eagerly (an in-memory transport)
                    chunks.append((clock(), response.content))
                else:
                    failure = await _read_stream(response, chunks, clock, protocol, max_tokens, limits or Limits())
            finally:
                await response.aclose()
    except TimeoutError:
        failure = ("timeout", f"the request took longer than {total_timeout_s:g} s")
    except httpx.ReadTimeout:
        failure = ("stall", f"no data from the server for {stall_timeout_s:g} s")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        failure = ("connect", f"cannot connect: {_describe(exc)}")
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        failure = ("dropped", f"connection dropped: {_describe(exc)}")
    except httpx.HTTPError as exc:
        failure = ("http", f"{type(exc).__name__}: {_describe(exc)}")
    return Exchange(
        protocol=protocol,
        seq=seq,
        phase=phase,
        label=label,
        t0=t0,
        t_headers=t_headers,
        t_end=clock(),
        status_code=status,
        chunks=chunks,
        failure=failure,
        max_tokens=max_tokens,
        ignore_eos=ignore_eos,
        params=params,
        group=group,
        prompt=prompt_text(body),
    )


async def _head(response: httpx.Response, n_bytes: int) -> bytes:
    """The first `n_bytes` of a body, without reading the rest (an error page may be huge)."""
    if response.is_stream_consumed:
        return response.content[:n_bytes]
    got = b""
    async for chunk in response.aiter_raw():
        got += chunk
        if len(got) >= n_bytes:
            break
    return got[:n_bytes]


class StreamGuard:
    """The per-read checks of the hot loop, shared by both transports: C-level byte scans only.

    `check(payload)` returns a failure when a limit is passed (the caller stops reading) and sets
    `finished` once the protocol's end marker has been seen (the caller may stop after a drain).
    """

    __slots__ = ("event_cap", "event_mark", "events", "finished", "limits", "line_bytes", "markers", "max_tokens", "total_bytes")

    def __init__(self, protocol: Protocol, max_tokens: int | None, limits: Limits) -> None:
        self.markers = _done_markers(protocol)
        self.event_mark = b"\n" if protocol.framing == "ndjson" else b"data:"
        self.max_tokens = max_tokens
        self.event_cap = max_tokens + EVENT_SLACK if max_tokens else None
        self.limits = limits
        self.line_bytes = self.total_bytes = self.events = 0
        self.finished = False

    def check(self, chunk: bytes) -> tuple[FailureKind, str] | None:
        self.total_bytes += len(chunk)
        newline = chunk.rfind(b"\n")
        self.line_bytes = self.line_bytes + len(chunk) if newline < 0 else len(chunk) - newline - 1
        if self.line_bytes > self.limits.line_bytes:
            return ("line-too-long", f"the server sent a line longer than {self.limits.line_bytes:,} bytes; reading stopped")
        if self.total_bytes > self.limits.response_bytes:
            return ("too-large", f"the response grew past {self.limits.response_bytes:,} bytes; reading stopped")
        if self.event_cap is not None:
            self.events += chunk.count(self.event_mark)
            if self.events > self.event_cap:
                return ("overrun", f"the server kept sending past max_tokens={self.max_tokens} ({self.events} events); reading stopped")
        if not self.finished and any(m in chunk for m in self.markers):
            self.finished = True
        return None


async def _read_stream(
    response: httpx.Response,
    chunks: list[Chunk],
    clock: Clock,
    protocol: Protocol,
    max_tokens: int | None,
    limits: Limits,
) -> tuple[FailureKind, str] | None:
    """The hot loop: stamp and keep each chunk; stop at the end marker or at a limit (named)."""
    guard = StreamGuard(protocol, max_tokens, limits)
    stream = response.aiter_raw()
    async for chunk in stream:
        chunks.append((clock(), chunk))
        failure = guard.check(chunk)
        if failure is not None:
            return failure
        if guard.finished:
            break
    if guard.finished:  # drain the tail so the connection can be reused, but never hang on it
        with contextlib.suppress(TimeoutError, httpx.HTTPError):
            async with asyncio.timeout(DONE_DRAIN_S):
                async for chunk in stream:
                    chunks.append((clock(), chunk))
                    if guard.total_bytes + len(chunk) > limits.response_bytes:
                        break
                    guard.total_bytes += len(chunk)
    return None


def prompt_text(body: Mapping[str, Any]) -> str | None:
    if isinstance(body.get("prompt"), str):
        return str(body["prompt"])
    messages = body.get("messages")
    if isinstance(messages, list):
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return None
