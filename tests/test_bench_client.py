"""The streaming client over httpx.MockTransport with a fake clock: stamps, counts, failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import httpx
import pytest

from bench_fixtures import FakeClock
from tokometer.bench.client import RequestRecord, build_record, send_streaming
from tokometer.bench.protocols import get_protocol


class Chunks(httpx.AsyncByteStream):
    """A response body delivered as separate reads."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def completion(text: str, finish: str | None = None) -> bytes:
    return sse({"choices": [{"index": 0, "text": text, "finish_reason": finish}]})


def transport(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


def send(parts: list[bytes], status: int = 200, protocol: str = "openai-completions", clock: FakeClock | None = None) -> RequestRecord:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, stream=Chunks(parts))

    async def go() -> RequestRecord:
        async with httpx.AsyncClient(transport=transport(handler)) as client:
            exchange = await send_streaming(
                client, "http://x/v1/completions", get_protocol(protocol), {"prompt": "p", "max_tokens": 4}, seq=0, phase="decode", label="", clock=clock or FakeClock(), max_tokens=4
            )
        return exchange.record()

    record = asyncio.run(go())
    assert seen and seen[0].headers["accept-encoding"] == "identity"
    return record


def test_each_read_is_stamped_and_usage_does_not_move_the_last_token() -> None:
    clock = FakeClock(start=0.0, step=1.0)  # t0 = 1; each read advances the clock by 1
    parts = [completion("a"), completion("b"), completion("c"), completion("d", "length"), sse({"choices": [], "usage": {"completion_tokens": 4, "prompt_tokens": 3}}), b"data: [DONE]\n\n"]
    record = send(parts, clock=clock)
    assert record.ok, record.error
    assert record.t0 == 1.0
    assert record.event_times == (3.0, 4.0, 5.0, 6.0)  # t_headers = 2, then one read each
    assert record.output_tokens == 4 and record.output_tokens_source == "usage"
    assert record.prompt_tokens == 3 and record.finish_reason == "length"
    m = record.metrics()
    assert m.ttft_ms == pytest.approx(2000.0)
    assert m.decode_tps == pytest.approx(1.0)
    assert record.params == {"max_tokens": 4}  # the prompt is not kept


def test_http_error_is_recorded_with_status_and_body() -> None:
    record = send([b'{"error": "boom"}'], status=500)
    assert not record.ok and record.error_kind == "http" and record.status_code == 500
    assert "HTTP 500" in (record.error or "") and "boom" in (record.error or "")


def test_error_object_inside_a_200_stream_is_a_failure() -> None:
    record = send([completion("a"), sse({"error": {"message": "overloaded", "type": "server_error"}}), b"data: [DONE]\n\n"])
    assert not record.ok and record.error_kind == "server-error"
    assert "overloaded" in (record.error or "")
    assert record.event_times  # what came before is kept


def test_malformed_json_is_a_failure() -> None:
    record = send([completion("a"), b'data: {"choices": [\n\n', completion("b", "length"), b"data: [DONE]\n\n"])
    assert not record.ok and record.error_kind == "malformed"


def test_stream_that_just_stops_is_truncated() -> None:
    record = send([completion("a"), completion("b")])
    assert not record.ok and record.error_kind == "truncated"


def test_stream_without_tokens_is_empty() -> None:
    record = send([b"data: [DONE]\n\n"])
    assert not record.ok and record.error_kind == "empty"


def test_connection_errors_become_records() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async def go() -> RequestRecord:
        async with httpx.AsyncClient(transport=transport(refuse)) as client:
            ex = await send_streaming(client, "http://x/v1/completions", get_protocol("openai-completions"), {}, seq=3, phase="decode", label="", clock=FakeClock())
        return ex.record()

    record = asyncio.run(go())
    assert not record.ok and record.error_kind == "connect" and record.seq == 3


def test_dropped_connection_mid_stream() -> None:
    class Dropping(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield completion("a")
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def go() -> RequestRecord:
        async with httpx.AsyncClient(transport=transport(lambda r: httpx.Response(200, stream=Dropping()))) as client:
            ex = await send_streaming(client, "http://x/v1/completions", get_protocol("openai-completions"), {}, seq=0, phase="decode", label="", clock=FakeClock())
        return ex.record()

    record = asyncio.run(go())
    assert not record.ok and record.error_kind == "dropped" and len(record.event_times) == 1


def test_ollama_ndjson_and_llamacpp_native_records() -> None:
    lines = [json.dumps({"response": w, "done": False}).encode() + b"\n" for w in ("a", "b", "c")]
    lines.append(json.dumps({"response": "", "done": True, "done_reason": "length", "eval_count": 3, "eval_duration": 2_000_000, "prompt_eval_count": 5, "prompt_eval_duration": 1_000_000}).encode() + b"\n")
    record = build_record(get_protocol("ollama"), [(float(i), part) for i, part in enumerate(lines)], seq=0, phase="decode", label="", t0=-1.0)
    assert record.ok and record.output_tokens == 3 and record.output_tokens_source == "eval_count"
    assert record.server_decode_tps == pytest.approx(1000.0)
    assert record.server_timings == {"eval_count": 3, "eval_duration": 2_000_000, "prompt_eval_count": 5, "prompt_eval_duration": 1_000_000}

    native = [sse({"content": "x", "stop": False}), sse({"content": "y", "stop": False}), sse({"content": "", "stop": True, "stop_type": "eos", "tokens_predicted": 2, "timings": {"predicted_n": 2, "predicted_ms": 10.0, "prompt_n": 4, "cache_n": 0}})]
    record = build_record(get_protocol("llamacpp"), [(float(i), p) for i, p in enumerate(native)], seq=1, phase="decode", label="", t0=-1.0, max_tokens=10)
    assert record.ok and record.finish_reason == "stop" and record.output_tokens == 2
    assert record.ended_early  # fewer than asked and not stopped for length


def test_continuous_usage_gives_tokens_per_event() -> None:
    parts = [
        sse({"choices": [{"text": "ab"}], "usage": {"completion_tokens": 2}}),
        sse({"choices": [{"text": "c"}], "usage": {"completion_tokens": 3}}),
        sse({"choices": [{"text": "", "finish_reason": "length"}], "usage": {"completion_tokens": 3}}),
        b"data: [DONE]\n\n",
    ]
    record = build_record(get_protocol("openai-completions"), [(float(i), p) for i, p in enumerate(parts)], seq=0, phase="decode", label="", t0=0.0)
    assert record.event_tokens == (2, 1)


def test_record_round_trips_through_its_stored_shape() -> None:
    record = send([completion("a"), completion("b", "length"), b"data: [DONE]\n\n"])
    stored = json.loads(json.dumps(record.to_dict()))
    again = RequestRecord.from_dict(stored)
    assert again.event_times == pytest.approx(record.event_times)
    assert again.metrics().decode_tps == pytest.approx(record.metrics().decode_tps)
    assert stored["event_times_s"][0] == pytest.approx(record.event_times[0] - record.t0)
