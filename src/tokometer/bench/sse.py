"""Server-sent events and NDJSON framing, parsed after the fact from timestamped raw chunks.

The client stamps every chunk the moment it comes off the socket (`time.perf_counter()`) and
keeps the bytes; parsing happens here, off the timed path. An event is stamped with the arrival
time of the chunk that completed it (the blank line that dispatches an SSE event, the newline
that ends an NDJSON line), so an event split across reads is dated when it became usable.

What the parser copes with (benchmarkers.md, section 7): `\\r\\n`, `\\r` or `\\n` line ends, a
`\\r\\n` split across two reads, comment and keep-alive lines (`:`), `data:` with or without a
space, several `data:` lines in one event, UTF-8 characters split across reads, and a last event
that the server closed without a blank line.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable
from dataclasses import dataclass

Chunk = tuple[float, bytes]
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One complete event: its payload text and when its last byte arrived (seconds, client clock)."""

    t_s: float
    data: str
    event: str | None = None


def _lines(chunks: Iterable[Chunk]) -> Iterable[tuple[float, str | None]]:
    """Yield (arrival time, line) for every complete line; a final None marks the end of stream.

    Linear in the bytes received: each read is searched for line ends once, and the pieces of a
    line that spans many reads are joined once, when it ends (a 16 MiB line in 64 KiB reads parses
    in tens of milliseconds; searching the growing remainder on every read was quadratic).
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    parts: list[str] = []  # the current line's pieces, from earlier reads
    held_cr = False  # the last read ended in '\r': maybe the first half of '\r\n'
    last_t = 0.0
    for t, raw in chunks:
        last_t = t
        text = decoder.decode(raw)
        if held_cr:
            text, held_cr = "\r" + text, False
        start = 0
        for match in _LINE_END.finditer(text):
            if match.group() == "\r" and match.end() == len(text):
                held_cr = True  # wait for the next read to see whether '\n' follows
                break
            piece = text[start : match.start()]
            if parts:
                parts.append(piece)
                piece = "".join(parts)
                parts.clear()
            yield t, piece
            start = match.end()
        rest = text[start : len(text) - 1] if held_cr else text[start:]
        if rest:
            parts.append(rest)
    tail = decoder.decode(b"", final=True)
    if tail:
        parts.append(tail)
    if held_cr or parts:
        yield last_t, "".join(parts)
    yield last_t, None


def parse_sse(chunks: Iterable[Chunk]) -> list[StreamEvent]:
    """Split timestamped chunks into SSE events (only events that carry `data`)."""
    events: list[StreamEvent] = []
    data: list[str] = []
    name: str | None = None
    for t, line in _lines(chunks):
        if line is None or line == "":
            if data:
                events.append(StreamEvent(t, "\n".join(data), name))
            data, name = [], None
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive ping
        field, sep, value = line.partition(":")
        if not sep:
            field, value = line, ""
        elif value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return events


def parse_ndjson(chunks: Iterable[Chunk]) -> list[StreamEvent]:
    """Split timestamped chunks into newline-delimited JSON records (blank lines skipped)."""
    return [StreamEvent(t, line) for t, line in _lines(chunks) if line is not None and line.strip()]


def parse_stream(chunks: Iterable[Chunk], framing: str) -> list[StreamEvent]:
    if framing == "sse":
        return parse_sse(chunks)
    if framing == "ndjson":
        return parse_ndjson(chunks)
    raise ValueError(f"unknown framing {framing!r}")
