"""Request bodies and event parsing for the four protocols; server counts first, reconciled."""

from __future__ import annotations

import pytest

from tokometer.bench.protocols import PROTOCOLS, GenerationRequest, get_protocol, server_counts


@pytest.mark.parametrize("name", PROTOCOLS)
def test_bodies_ask_for_greedy_streams_of_the_right_length(name: str) -> None:
    body = get_protocol(name).body(GenerationRequest("hi", 200, model="m", ignore_eos=True, cache_prompt=False))
    assert body["stream"] is True
    if name == "ollama":
        assert body["options"] == {"temperature": 0.0, "num_predict": 200, "seed": 0}
        assert "ignore_eos" not in body  # Ollama has none
        assert body["model"] == "m"
    else:
        assert body["temperature"] == 0.0
        assert body["ignore_eos"] is True
    if name.startswith("openai"):
        assert body["max_tokens"] == 200
        assert body["stream_options"] == {"include_usage": True}
    if name == "llamacpp":
        assert body["n_predict"] == 200
        assert body["cache_prompt"] is False
        assert "model" not in body
    if name == "openai-chat":
        assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_chat_role_only_and_usage_only_chunks_carry_no_token() -> None:
    chat = get_protocol("openai-chat")
    role = chat.parse({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
    usage = chat.parse({"choices": [], "usage": {"completion_tokens": 5}})
    assert not role.is_token and not usage.is_token
    assert usage.usage == {"completion_tokens": 5}


@pytest.mark.parametrize(
    "delta",
    [{"content": "x"}, {"reasoning_content": "thinking"}, {"reasoning": "t"}, {"tool_calls": [{"index": 0}]}],
)
def test_chat_content_reasoning_and_tool_calls_are_tokens(delta: dict[str, object]) -> None:
    assert get_protocol("openai-chat").parse({"choices": [{"delta": delta}]}).is_token


def test_completions_finish_reason_and_error_objects() -> None:
    comp = get_protocol("openai-completions")
    assert comp.parse({"choices": [{"text": "", "finish_reason": "length"}]}).finish_reason == "length"
    error = comp.parse({"error": {"message": "overloaded", "code": 503}})
    assert error.error == "overloaded (503)"


def test_llamacpp_final_event_has_timings_and_counts() -> None:
    parsed = get_protocol("llamacpp").parse(
        {"content": "", "stop": True, "stop_type": "limit", "tokens_predicted": 10, "tokens_evaluated": 7, "timings": {"predicted_n": 10}}
    )
    assert parsed.done and parsed.finish_reason == "length" and not parsed.is_token
    assert parsed.usage is None  # counts come from timings (predicted_n, prompt_n + cache_n)
    assert parsed.timings == {"predicted_n": 10}
    assert get_protocol("llamacpp").parse({"content": "x", "stop": True, "stopped_eos": True}).finish_reason == "stop"


def test_ollama_final_line_keeps_durations_verbatim() -> None:
    parsed = get_protocol("ollama").parse({"response": "", "done": True, "done_reason": "length", "eval_count": 9, "eval_duration": 2_000_000_000, "context": [1, 2]})
    assert parsed.done and parsed.finish_reason == "length"
    assert parsed.timings == {"eval_count": 9, "eval_duration": 2_000_000_000}
    assert get_protocol("ollama").parse({"error": "model not found"}).error == "model not found"


def test_non_object_event_is_an_error() -> None:
    assert get_protocol("openai-chat").parse([1, 2]).invalid == "an event is a list, expected a JSON object"


def test_usage_beats_timings_beats_events() -> None:
    counts = server_counts({"completion_tokens": 50, "prompt_tokens": 20}, {"predicted_n": 49}, 40)
    assert (counts.output_tokens, counts.output_tokens_source) == (50, "usage")
    assert server_counts(None, {"predicted_n": 49}, 40).output_tokens_source == "timings"
    assert server_counts(None, {"eval_count": 48}, 40).output_tokens == 48
    assert (server_counts(None, None, 40).output_tokens, server_counts(None, None, 40).output_tokens_source) == (40, "events")


def test_llamacpp_decode_rate_is_reconciled_to_n_minus_one() -> None:
    # llama-server: predicted_per_second = N / predicted_ms, over N-1 intervals
    timings = {"predicted_n": 201, "predicted_ms": 2000.0, "predicted_per_second": 100.5, "prompt_n": 30, "cache_n": 70, "prompt_ms": 50.0}
    counts = server_counts(None, timings, 201)
    assert counts.server_decode_tps == pytest.approx(100.0)
    assert counts.server_reported_decode_tps == 100.5
    assert counts.prompt_tokens == 100 and counts.cached_tokens == 70
    assert counts.server_prefill_ms == 50.0


def test_ollama_decode_rate_from_nanoseconds() -> None:
    counts = server_counts(None, {"eval_count": 11, "eval_duration": 1_000_000_000, "prompt_eval_count": 12, "prompt_eval_duration": 5_000_000}, 11)
    assert counts.server_decode_tps == pytest.approx(10.0)
    assert counts.server_reported_decode_tps == pytest.approx(11.0)
    assert counts.prompt_tokens == 12
    assert counts.server_prefill_ms == pytest.approx(5.0)


def test_cached_tokens_from_openai_usage_details() -> None:
    counts = server_counts({"completion_tokens": 3, "prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 64}}, None, 3)
    assert counts.cached_tokens == 64
