"""The wire client: chunked decoding however the bytes are split, and the same records as httpx."""

from __future__ import annotations

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench_fixtures import bench_home, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.bench.wire import _Dechunker, usable

pytestmark = pytest.mark.timeout(120)
PAYLOADS = [b'data: {"a": 1}\n\n', b"x" * 300, b"", b"data: [DONE]\n\n"]


def _chunked(parts: list[bytes]) -> bytes:
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"


@given(st.lists(st.integers(min_value=1, max_value=50), max_size=40))
def test_dechunking_does_not_depend_on_how_the_bytes_were_split(cuts: list[int]) -> None:
    raw = _chunked(PAYLOADS)
    decoder, out, at = _Dechunker(), [], 0
    for size in [*cuts, len(raw)]:
        out.append(decoder.feed(raw[at : at + size]))
        at += size
    assert b"".join(out) == b"".join(PAYLOADS) and decoder.done


def test_a_bad_chunk_size_is_an_error() -> None:
    with pytest.raises(ValueError):
        _Dechunker().feed(b"zz\r\nabc")


def test_proxied_urls_use_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    assert usable("http://127.0.0.1:8000/v1/completions")
    assert not usable("ftp://x/")
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "")
    assert not usable("http://server.example:8000/v1")


@pytest.mark.parametrize("flavor", ["openai", "vllm", "llamacpp", "ollama"])
def test_wire_and_httpx_give_the_same_records(flavor: str) -> None:
    with synthetic(tok_s=500.0, ttft_s=0.005, flavor=flavor, tokens_per_event=2) as server:
        config = BenchConfig(server.url, max_tokens=12, prompt_tokens=50, runs=2)
        wire_run = Runner(config)
        wire = wire_run.run()
        plain = Runner(config, transport=httpx.AsyncHTTPTransport()).run()
    assert wire_run.use_wire
    assert [r.ok for r in wire.records] == [r.ok for r in plain.records] == [True] * 5
    for a, b in zip(wire.records, plain.records, strict=True):
        assert (a.output_tokens, a.finish_reason, a.prompt_tokens, a.events_total) == (b.output_tokens, b.finish_reason, b.prompt_tokens, b.events_total)
    # a sanity bound only: on two loaded cores the synthetic server itself falls behind its 4 ms events;
    # the client's accuracy is measured side by side in benchmarks/client_accuracy.py
    assert wire.summary()["decode_tps"]["median"] == pytest.approx(500.0, rel=0.3)


def test_a_server_that_closes_after_each_response_gets_a_fresh_connection() -> None:
    import asyncio
    import time

    from tokometer.bench.protocols import GenerationRequest, get_protocol
    from tokometer.bench.wire import Lane

    body = b'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b","finish_reason":"length"}]}\n\ndata: [DONE]\n\n'

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        await writer.drain()
        writer.close()

    async def main() -> list[bool]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/completions"
        lane = Lane(url, time.perf_counter, {}, None)
        protocol = get_protocol("openai-completions")
        oks = []
        for seq in range(3):
            exchange = await lane.send(url, protocol, protocol.body(GenerationRequest("hi", 2)), seq=seq, phase="decode", label="", stall_timeout_s=5, total_timeout_s=10, max_tokens=2, ignore_eos=False)
            record = exchange.record()
            oks.append(record.ok and record.output_tokens == 2 and record.finish_reason == "length")
        lane.close()
        server.close()
        return oks

    assert asyncio.run(main()) == [True, True, True]
