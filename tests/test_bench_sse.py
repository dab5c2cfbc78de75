"""SSE and NDJSON framing: every pitfall of benchmarkers.md section 7, and chunking invariance."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokometer.bench.sse import parse_ndjson, parse_sse, parse_stream

STREAM = (
    ": keep-alive ping\r\n\r\n"
    'data: {"a": 1}\r\n\r\n'
    'data:{"b": "héllo ✓"}\n\n'
    "event: message\ndata: line one\ndata: line two\n\n"
    "data: [DONE]\n\n"
).encode()


def test_events_comments_spaces_and_multiline() -> None:
    events = parse_sse([(1.0, STREAM)])
    assert [e.data for e in events] == ['{"a": 1}', '{"b": "héllo ✓"}', "line one\nline two", "[DONE]"]
    assert events[2].event == "message"
    assert all(e.t_s == 1.0 for e in events)


def test_event_is_dated_by_the_chunk_that_completes_it() -> None:
    chunks = [(1.0, b'data: {"x"'), (2.0, b": 1}\n"), (3.0, b"\n"), (4.0, b"data: 2\n\n")]
    events = parse_sse(chunks)
    assert [(e.t_s, e.data) for e in events] == [(3.0, '{"x": 1}'), (4.0, "2")]


def test_crlf_split_across_reads_is_one_line_end() -> None:
    chunks = [(1.0, b"data: a\r"), (2.0, b"\n\r"), (3.0, b"\ndata: b\r\n\r\n")]
    events = parse_sse(chunks)
    assert [(e.t_s, e.data) for e in events] == [(3.0, "a"), (3.0, "b")]


def test_utf8_character_split_across_reads() -> None:
    raw = 'data: {"t": "日本"}\n\n'.encode()
    cut = raw.index("本".encode()) + 1  # inside the 3-byte character
    events = parse_sse([(1.0, raw[:cut]), (2.0, raw[cut:])])
    assert events[0].data == '{"t": "日本"}'
    assert events[0].t_s == 2.0


def test_last_event_without_blank_line_is_kept() -> None:
    events = parse_sse([(1.0, b"data: one\n\ndata: two")])
    assert [e.data for e in events] == ["one", "two"]


def test_ndjson_skips_blank_lines_and_keeps_the_tail() -> None:
    events = parse_ndjson([(1.0, b'{"a":1}\n\n{"b"'), (2.0, b":2}\n{\"c\":3}")])
    assert [(e.t_s, e.data) for e in events] == [(1.0, '{"a":1}'), (2.0, '{"b":2}'), (2.0, '{"c":3}')]


def test_parse_stream_dispatches_on_framing() -> None:
    assert parse_stream([(0.0, b'{"x":1}\n')], "ndjson")[0].data == '{"x":1}'
    assert parse_stream([(0.0, b"data: x\n\n")], "sse")[0].data == "x"


@given(st.lists(st.integers(min_value=1, max_value=len(STREAM) - 1), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    chunks = [(float(i), piece) for i, piece in enumerate(pieces)]
    assert [e.data for e in parse_sse(chunks)] == [e.data for e in parse_sse([(0.0, STREAM)])]


@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_events_do_not_depend_on_how_the_bytes_were_split(cuts: list[int]) -> None:
    raw = 'data: {"a": 1}\r\n\r\n: ping\n\ndata: x\rdata: y\r\rdata: 日本\n\ndata: tail'.encode()
    chunks, at = [], 0
    for i, size in enumerate(cuts):
        chunks.append((float(i), raw[at : at + size]))
        at += size
    chunks.append((float(len(cuts)), raw[at:]))
    assert [e.data for e in parse_sse(chunks)] == [e.data for e in parse_sse([(0.0, raw)])] == ['{"a": 1}', "x\ny", "日本", "tail"]
