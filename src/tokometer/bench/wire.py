"""A minimal HTTP/1.1 streaming client on asyncio's Protocol API: the bench's timed path.

Why not httpx here: under 256 concurrent streams its per-request and per-chunk work (pool
scheduling, h11 events, async iterator layers) runs on the same event loop that must stamp every
other stream's bytes, and TTFT came out 44-51 % high against a synthetic server at 250 ms
(benchmarks/client_accuracy.py); decode stayed within 1.5 % only because it is a ratio of late
stamps. Here the event loop calls `data_received` the moment a read returns, and that method
does what the measurement needs and little else: read the clock, undo the chunked framing
(a small state machine), append, and run the size and `max_tokens` checks of
`client.StreamGuard`. Each stream owns one keep-alive connection (`Lane`), opened before the
clock starts; the request is written with one `transport.write`, right after `t0` is read.

What it does not do, and where `client.send_streaming` (httpx) is used instead: proxies,
HTTP/2, content encodings (the request asks for `identity`), redirects (reported, never followed).
The result is the same `Exchange` either way, so everything after the stream is shared.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from tokometer.bench.client import (
    DONE_DRAIN_S,
    Clock,
    Exchange,
    Limits,
    StreamGuard,
    prompt_text,
)
from tokometer.bench.protocols import Protocol
from tokometer.bench.sse import Chunk
from tokometer.domain.runrecord import FailureKind, Phase

MAX_HEAD_BYTES = 64 * 1024
ERROR_BODY_BYTES = 300


def usable(url: str) -> bool:
    """Whether this client can talk to `url`: http(s) without a proxy configured for it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    proxies = urllib.request.getproxies()
    return not (proxies.get(parts.scheme) or proxies.get("all")) or bool(urllib.request.proxy_bypass(parts.hostname))


class _Dechunker:
    """Incremental `Transfer-Encoding: chunked` decoder: feed raw bytes, get payload bytes."""

    def __init__(self) -> None:
        self.buffer = b""  # an incomplete size line
        self.left = 0  # payload bytes still due in the current chunk
        self.skip = 0  # CRLF bytes after a chunk's payload still to drop
        self.done = False

    def feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        at, end = 0, len(data)
        while at < end and not self.done:
            if self.left:
                take = min(self.left, end - at)
                out.append(data[at : at + take])
                at += take
                self.left -= take
                if not self.left:
                    self.skip = 2
                continue
            if self.skip:
                drop = min(self.skip, end - at)
                at += drop
                self.skip -= drop
                continue
            newline = data.find(b"\n", at)
            if newline < 0:
                self.buffer += data[at:]
                if len(self.buffer) > 1024:
                    raise ValueError("a chunk-size line longer than 1 KiB")
                break
            line = (self.buffer + data[at:newline]).split(b";", 1)[0].strip()
            self.buffer = b""
            at = newline + 1
            size = int(line, 16) if line else 0
            if size < 0:
                raise ValueError("a negative chunk size")
            if size == 0:
                self.done = True  # trailers, if any, are ignored
            self.left = size
        return b"".join(out) if len(out) != 1 else out[0]


class _Response(asyncio.Protocol):
    """One connection's reader: stamps and keeps each read of the response being awaited."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.lost_error: str | None = None
        self._reset(None, None)

    def _reset(self, guard: StreamGuard | None, done: asyncio.Future[None] | None) -> None:
        self.guard = guard
        self.done = done
        self.head = b""
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.t_headers: float | None = None
        self.chunks: list[Chunk] = []
        self.failure: tuple[FailureKind, str] | None = None
        self.body_left: int | None = None  # Content-Length framing
        self.dechunker: _Dechunker | None = None
        self.error_body = b""
        self.finished = False  # the response ended (the connection may be reused)
        self.marker_at: float | None = None
        self.last_t = 0.0

    def begin(self, guard: StreamGuard, done: asyncio.Future[None]) -> None:
        self._reset(guard, done)

    # --- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.lost_error = str(exc) if exc else None
        if self.done is not None and not self.done.done():
            if self.status is not None and self.body_left is None and self.dechunker is None and self.failure is None:
                self.finished = True  # a body delimited by the connection closing
            self.done.set_result(None)

    def data_received(self, data: bytes) -> None:
        t = self.clock()
        self.last_t = t
        if self.done is None or self.done.done():
            return  # bytes after the end of a response we stopped reading
        try:
            if self.status is None:
                data = self._read_head(data, t)
                if self.status is None or not data:
                    return
            self._read_body(data, t)
        except ValueError as exc:
            self._stop(("dropped", f"unreadable HTTP response: {exc}"), reusable=False)

    # --- parsing -------------------------------------------------------------------------------

    def _read_head(self, data: bytes, t: float) -> bytes:
        self.head += data
        end = self.head.find(b"\r\n\r\n")
        if end < 0:
            if len(self.head) > MAX_HEAD_BYTES:
                raise ValueError(f"response headers longer than {MAX_HEAD_BYTES:,} bytes")
            return b""
        lines = self.head[:end].decode("latin-1").split("\r\n")
        rest = self.head[end + 4 :]
        self.head = b""
        version, _, status_text = lines[0].partition(" ")
        if not version.startswith("HTTP/"):
            raise ValueError(f"not an HTTP response: {lines[0][:60]!r}")
        code = status_text.split(" ", 1)[0]
        if not code.isdigit():
            raise ValueError(f"bad status line {lines[0][:60]!r}")
        status = int(code)
        if 100 <= status < 200:  # an interim response (100 Continue): the real one follows
            return self._read_head(rest, t) if rest else b""
        self.status = status
        self.t_headers = t
        for line in lines[1:]:
            key, _, value = line.partition(":")
            self.headers[key.strip().lower()] = value.strip()
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            self.dechunker = _Dechunker()
        elif self.headers.get("content-length", "").isdigit():
            self.body_left = int(self.headers["content-length"])
        if 300 <= status < 400:
            where = self.headers.get("location") or "an unnamed place"
            self.failure = ("redirect", f"HTTP {status} redirect to {where[:200]}: give that URL (redirects are not followed)")
        elif status < 400 and self.headers.get("content-type", "").lower().startswith("text/html"):
            self.failure = ("html", f"the server answered HTTP {status} with an HTML page, not a token stream (wrong URL, or a login or proxy page?)")
        if self.body_left == 0 or (self.body_left is None and self.dechunker is None and status in (204, 304)):
            self._stop(self._error_failure(), reusable=True)
            return b""
        return rest

    def _read_body(self, data: bytes, t: float) -> None:
        if self.dechunker is not None:
            payload = self.dechunker.feed(data)
            ended = self.dechunker.done
        elif self.body_left is not None:
            payload = data[: self.body_left]
            self.body_left -= len(payload)
            ended = self.body_left == 0
        else:
            payload, ended = data, False
        if self.status is not None and (self.status >= 400 or self.failure is not None):
            self.error_body += payload[: ERROR_BODY_BYTES - len(self.error_body)]
            if ended or len(self.error_body) >= ERROR_BODY_BYTES:
                self._stop(self._error_failure(), reusable=ended)
            return
        if payload:
            self.chunks.append((t, payload))
            assert self.guard is not None
            stop = self.guard.check(payload)
            if stop is not None:
                self._stop(stop, reusable=False)
                return
            if self.marker_at is None and self.guard.finished:
                self.marker_at = t
        if ended:
            self._stop(None, reusable=True)

    def _error_failure(self) -> tuple[FailureKind, str] | None:
        if self.failure is not None:
            return self.failure
        if self.status is not None and self.status >= 400:
            detail = self.error_body.decode("utf-8", "replace").strip()
            return ("http", f"HTTP {self.status}" + (f": {detail}" if detail else ""))
        return None

    def _stop(self, failure: tuple[FailureKind, str] | None, *, reusable: bool) -> None:
        self.failure = failure
        self.finished = reusable  # the response ended cleanly (it may still ask to close)
        if "close" in self.headers.get("connection", "").lower():
            reusable = False
        if not reusable and self.transport is not None:
            self.transport.abort()
        if self.done is not None and not self.done.done():
            self.done.set_result(None)


class Lane:
    """One stream's keep-alive connection to one server; requests on it run one at a time."""

    def __init__(self, url: str, clock: Clock, headers: Mapping[str, str], ssl_context: ssl.SSLContext | None) -> None:
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        default_port = (parts.scheme == "https" and self.port == 443) or (parts.scheme == "http" and self.port == 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if default_port else f"{host}:{self.port}"
        self.clock = clock
        self.headers = dict(headers)
        self.ssl_context = ssl_context if parts.scheme == "https" else None
        self.protocol: _Response | None = None

    @property
    def connected(self) -> bool:
        p = self.protocol
        return p is not None and not p.lost and p.transport is not None and not p.transport.is_closing()

    async def open(self, timeout_s: float = 30.0) -> None:
        """Connect now (before any clock starts), unless already connected."""
        if self.connected:
            return
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout_s):
            _, protocol = await loop.create_connection(
                lambda: _Response(self.clock),
                self.host,
                self.port,
                ssl=self.ssl_context,
                server_hostname=self.host if self.ssl_context else None,
            )
        self.protocol = protocol

    def close(self) -> None:
        if self.protocol is not None and self.protocol.transport is not None:
            self.protocol.transport.close()
        self.protocol = None

    def _request_bytes(self, path: str, content: bytes) -> bytes:
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: {self.host_header}",
            "Content-Type: application/json",
            "Accept: text/event-stream, application/x-ndjson, application/json",
            "Accept-Encoding: identity",
            f"Content-Length: {len(content)}",
            *(f"{k}: {v}" for k, v in self.headers.items()),
        ]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + content

    async def send(
        self,
        url: str,
        protocol: Protocol,
        body: dict[str, Any],
        *,
        seq: int,
        phase: Phase,
        label: str,
        stall_timeout_s: float,
        total_timeout_s: float | None,
        max_tokens: int | None,
        ignore_eos: bool,
        group: int = 0,
        limits: Limits | None = None,
    ) -> Exchange:
        """Write one request and read its stream; never raises for I/O failures (like `send_streaming`)."""
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = self._request_bytes(path, json.dumps(body).encode())
        params = {k: v for k, v in body.items() if k not in ("prompt", "messages")}
        failure: tuple[FailureKind, str] | None = None
        reader: _Response | None = None
        try:
            await self.open(min(stall_timeout_s, 30.0))
        except (OSError, TimeoutError) as exc:
            failure = ("connect", f"cannot connect: {exc or type(exc).__name__}")
        loop = asyncio.get_running_loop()
        t0 = self.clock()
        if failure is None:
            reader = self.protocol
            assert reader is not None and reader.transport is not None
            done: asyncio.Future[None] = loop.create_future()
            reader.begin(StreamGuard(protocol, max_tokens, limits or Limits()), done)
            reader.transport.write(request)  # t0 is read just before: nothing else runs in between
            failure = await self._wait(reader, done, stall_timeout_s, total_timeout_s)
        t_end = self.clock()
        if reader is None or not reader.finished:
            self.close()
        return Exchange(
            protocol=protocol,
            seq=seq,
            phase=phase,
            label=label,
            t0=t0,
            t_headers=reader.t_headers if reader else None,
            t_end=t_end,
            status_code=reader.status if reader else None,
            chunks=reader.chunks if reader else [],
            failure=failure,
            max_tokens=max_tokens,
            ignore_eos=ignore_eos,
            params=params,
            group=group,
            prompt=prompt_text(body),
        )

    async def _wait(
        self, reader: _Response, done: asyncio.Future[None], stall_s: float, total_s: float | None
    ) -> tuple[FailureKind, str] | None:
        """Until the response ends, stalls, passes its total time, or lingers after its end marker."""
        start = time.monotonic()
        reader.last_t = self.clock()
        while not done.done():
            now = self.clock()
            waits = [reader.last_t + stall_s - now]
            if total_s is not None:
                waits.append(start + total_s - time.monotonic())
            if reader.marker_at is not None:
                waits.append(reader.marker_at + DONE_DRAIN_S - now)
            wait = min(waits)
            if wait > 0:
                # asyncio.wait, not wait_for: 3.11's wait_for can swallow a cancellation (the run's
                # deadline, a signal) that lands as the response completes
                await asyncio.wait((done,), timeout=wait)
                continue
            if reader.marker_at is not None and self.clock() >= reader.marker_at + DONE_DRAIN_S:
                reader.finished = False  # the server said it was done but kept the response open
                return reader.failure
            if total_s is not None and time.monotonic() - start >= total_s:
                return ("timeout", f"the request took longer than {total_s:g} s")
            return ("stall", f"no data from the server for {stall_s:g} s")
        if reader.lost and not reader.finished and reader.failure is None:
            if reader.status is None:
                return ("dropped", f"connection dropped: {reader.lost_error or 'the server closed the connection before answering'}")
            if reader.marker_at is None:
                return ("dropped", f"connection dropped: {reader.lost_error or 'the server closed the connection mid-stream'}")
        return reader.failure


__all__ = ["Lane", "usable"]
