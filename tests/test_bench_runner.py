"""The runner's four modes against the synthetic server (a real HTTP server on 127.0.0.1)."""

from __future__ import annotations

import json

import httpx
import pytest

from bench_fixtures import FakeClock, bench_home, synthetic  # noqa: F401
from tokometer.bench.client import RequestRecord
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.bench.summary import summarize_records
from tokometer.errors import BenchError, InputError

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("flavor", ["openai", "vllm", "llamacpp", "ollama"])
def test_speed_mode_measures_the_known_rate_on_every_protocol(flavor: str) -> None:
    with synthetic(tok_s=200.0, ttft_s=0.03, prefill_tok_s=50_000.0, flavor=flavor) as server:
        result = Runner(BenchConfig(server.url, max_tokens=40, prompt_tokens=400, runs=3)).run()
        served = list(server.served)
    s = result.summary()
    assert result.status == "complete"
    assert s["requests_ok"] == 6 and s["requests_failed"] == 0 and s["cold_requests"] == 1
    assert s["decode_tps"]["median"] == pytest.approx(200.0, rel=0.1)
    assert s["ttft_prompt_tokens"] >= 300  # the long prompt went to the TTFT phase
    assert s["ttft_ms"]["median"] > 30.0
    assert s["output_tokens"]["median"] == 40
    expected_source = {"openai": "usage", "vllm": "usage", "llamacpp": "timings", "ollama": "eval_count"}[flavor]
    assert s["output_tokens_source"] == expected_source
    protocol = {"openai": "openai-completions", "vllm": "openai-completions", "llamacpp": "llamacpp", "ollama": "ollama"}[flavor]
    assert result.endpoint is not None and result.endpoint.protocol.name == protocol
    if flavor in ("llamacpp", "ollama"):
        assert s["client_server_gap_fraction"] == pytest.approx(0.0, abs=0.1)
    # fresh nonce on every prompt: no two requests share a prompt prefix
    assert len(served) == 7
    assert result.to_dict()["requests"][1]["event_times_s"][0] > 0


def test_prompt_tokens_from_tokenize_when_the_server_sends_no_usage() -> None:
    with synthetic(tok_s=500.0, ttft_s=0.01, prefill_tok_s=100_000.0, usage=False) as server:
        result = Runner(BenchConfig(server.url, max_tokens=10, prompt_tokens=300, runs=2)).run()
    s = result.summary()
    assert s["output_tokens_source"] == "events"
    assert 250 <= s["ttft_prompt_tokens"] <= 350
    assert s["prefill_tps"]["median"] is not None
    assert {r.prompt_tokens_source for r in result.records} == {"tokenize"}
    assert result.tokens_per_word == pytest.approx(1.0)


def test_first_token_waits_for_content_not_the_role_chunk() -> None:
    with synthetic(tok_s=200.0, ttft_s=0.15) as server:
        result = Runner(BenchConfig(server.url, protocol="openai-chat", max_tokens=10, prompt_tokens=0, runs=2)).run()
    assert result.summary()["ttft_ms"]["median"] >= 150.0


def test_depth_mode_calibrates_prompt_length_with_the_server_count() -> None:
    with synthetic(tok_s=500.0, ttft_s=0.01) as server:
        result = Runner(BenchConfig(server.url, max_tokens=20, depths=(0, 1500), runs=2)).run()
    levels = result.levels()
    assert [lv["label"] for lv in levels] == ["depth=0", "depth=1500"]
    deep = levels[1]["summary"]["prompt_tokens"]
    assert 1400 <= deep <= 1600
    assert result.tokens_per_word == pytest.approx(1.0)


def test_concurrency_mode_reports_per_stream_and_aggregate() -> None:
    # the reduced client-accuracy check: 8 streams of 50 tok/s each
    with synthetic(tok_s=50.0, ttft_s=0.02) as server:
        result = Runner(BenchConfig(server.url, max_tokens=30, concurrency=(1, 8), runs=1)).run()
    levels = {lv["label"]: lv["summary"] for lv in result.levels()}
    eight = levels["concurrency=8"]
    assert eight["requests_ok"] == 8
    assert eight["decode_tps"]["median"] == pytest.approx(50.0, rel=0.08)
    assert eight["aggregate_tps"]["median"] == pytest.approx(400.0, rel=0.15)
    assert levels["concurrency=1"]["aggregate_tps"]["median"] == pytest.approx(50.0, rel=0.08)


def test_rate_mode_runs_open_loop_and_reports_goodput() -> None:
    with synthetic(tok_s=200.0, ttft_s=0.01) as server:
        config = BenchConfig(server.url, max_tokens=10, rate_rps=20.0, duration_s=1.0, slo_ttft_ms=1000.0, slo_tpot_ms=100.0, seed=1)
        result = Runner(config).run()
    level = result.levels()[0]
    s = level["summary"]
    assert level["label"] == "rate=20.0" and level["rate"] == 20.0
    assert s["requests_ok"] >= 5 and s["request_throughput_rps"] > 0
    assert s["slo"] == {"ttft_ms": 1000.0, "tpot_ms": 100.0}
    assert s["good_requests"] == s["requests_ok"]  # 5 ms per token is well inside 100 ms
    assert s["goodput_rps"] == pytest.approx(s["request_throughput_rps"])


def test_goodput_counts_requests_meeting_every_slo() -> None:
    def record(seq: int, ttft_s: float, gap_s: float) -> RequestRecord:
        times = tuple(ttft_s + gap_s * i for i in range(11))
        return RequestRecord(seq=seq, phase="rate", label="rate=1.0", ok=True, t0=0.0, t_end=times[-1], event_times=times)

    records = [record(0, 0.1, 0.01), record(1, 0.5, 0.01), record(2, 0.1, 0.05)]
    s = summarize_records(records, slo_ttft_ms=200.0, slo_tpot_ms=20.0)
    assert s["good_requests"] == 1  # the second misses TTFT, the third misses TPOT
    assert s["duration_s"] == pytest.approx(0.6)
    assert s["goodput_rps"] == pytest.approx(1 / 0.6)
    assert summarize_records(records, slo_tpot_ms=20.0)["good_requests"] == 2


def test_requests_cap_bounds_any_mode() -> None:
    with synthetic(tok_s=1000.0, ttft_s=0.005) as server:
        result = Runner(BenchConfig(server.url, max_tokens=5, runs=10, requests=4)).run()
    assert result.summary()["requests_total"] == 4
    assert any("--requests 4" in n for n in result.notes)


def test_keyboard_interrupt_keeps_what_was_measured() -> None:
    calls = []

    def progress(done: int, total: int | None, label: str) -> None:
        calls.append(done)
        if done == 3:
            raise KeyboardInterrupt

    with synthetic(tok_s=1000.0, ttft_s=0.005) as server:
        result = Runner(BenchConfig(server.url, max_tokens=5, runs=5), progress=progress).run()
    assert result.status == "interrupted"
    assert len(result.records) == 3
    assert result.summary()["requests_ok"] == 2  # the cold run is not counted
    assert any("interrupted" in n for n in result.notes)


class Reads(httpx.AsyncByteStream):
    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self):  # type: ignore[no-untyped-def]
        for part in self.parts:
            yield part


def test_completions_fall_back_to_chat_and_fake_clock_makes_it_exact() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        if request.url.path == "/v1/chat/completions":
            body = json.loads(request.content)
            assert body["messages"][0]["role"] == "user"
            parts = [{"choices": [{"delta": {"content": f" w{i}"}}]} for i in range(3)]
            parts.append({"choices": [{"delta": {}, "finish_reason": "length"}]})
            return httpx.Response(200, stream=Reads([f"data: {json.dumps(p)}\n\n".encode() for p in parts] + [b"data: [DONE]\n\n"]))
        return httpx.Response(404, json={"error": "no such route"})

    clock = FakeClock(step=0.01)  # every read of the clock advances it 10 ms
    result = Runner(BenchConfig("http://fake:1", max_tokens=3, prompt_tokens=0, runs=2), transport=httpx.MockTransport(handler), clock=clock).run()
    assert result.endpoint is not None and result.endpoint.protocol.name == "openai-chat"
    assert any("chat" in n for n in result.notes)
    s = result.summary()
    assert s["requests_ok"] == 2
    # t0, headers, then one read per chunk: first token 20 ms after t0, then 10 ms per token
    assert s["ttft_ms"]["median"] == pytest.approx(20.0)
    assert s["decode_tps"]["median"] == pytest.approx(100.0)
    assert s["output_tokens_source"] == "events"


def test_api_key_is_sent_but_never_stored() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        text = 'data: {"choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"b","finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
        return httpx.Response(200, content=text.encode())

    config = BenchConfig("http://fake:1", max_tokens=2, prompt_tokens=0, runs=1, api_key="sk-secret-123")
    result = Runner(config, transport=httpx.MockTransport(handler), clock=FakeClock()).run()
    assert "Bearer sk-secret-123" in seen
    assert "sk-secret-123" not in json.dumps(result.to_dict())
    assert "sk-secret-123" not in repr(config)
    assert result.to_dict()["config"]["authenticated"] is True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"depths": (0,), "concurrency": (1,)},
        {"runs": 0},
        {"max_tokens": 0},
        {"concurrency": (0,)},
        {"rate_rps": -1.0},
        {"duration_s": 5.0},
        {"requests": 0},
        {"depths": (-5,)},
    ],
)
def test_bad_configurations_are_input_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(InputError):
        Runner(BenchConfig("http://x", **kwargs))  # type: ignore[arg-type]


def test_a_server_that_is_not_an_llm_is_one_clear_error() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(404, text="<html>nothing here</html>"))
    with pytest.raises(BenchError, match="does not answer as an LLM server"):
        Runner(BenchConfig("http://fake:1", max_tokens=3, runs=1), transport=transport, clock=FakeClock()).run()


def test_rate_mode_tells_the_writer_when_no_request_is_in_flight() -> None:
    seen: list[bool] = []
    with synthetic(tok_s=500.0, ttft_s=0.01) as server:
        result = Runner(BenchConfig(server.url, max_tokens=5, rate_rps=20.0, requests=6, seed=3), on_quiet=seen.append).run()
    assert result.summary()["requests_ok"] == 6
    assert seen and seen[0] is False and seen[-1] is True
    assert all(a != b for a, b in zip(seen, seen[1:], strict=False))  # busy and quiet alternate
