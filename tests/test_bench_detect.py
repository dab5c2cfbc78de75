"""Which protocol a URL speaks, with or without /v1, and who the server is."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tokometer.bench.detect import Endpoint, detect, split_url
from tokometer.errors import BenchError


@pytest.mark.parametrize(
    ("url", "root", "openai", "named"),
    [
        ("http://h:8080", "http://h:8080", "http://h:8080/v1", None),
        ("http://h:8080/", "http://h:8080", "http://h:8080/v1", None),
        ("http://h:8080/v1", "http://h:8080", "http://h:8080/v1", None),
        ("h:8080/v1/", "http://h:8080", "http://h:8080/v1", None),
        ("https://h/v1/chat/completions", "https://h", "https://h/v1", "openai-chat"),
        ("http://h/v1/completions", "http://h", "http://h/v1", "openai-completions"),
        ("http://h/completion", "http://h", "http://h/v1", "llamacpp"),
        ("http://h:11434/api/generate", "http://h:11434", "http://h:11434/v1", "ollama"),
        ("https://h/openai/chat/completions", "https://h/openai", "https://h/openai", "openai-chat"),
    ],
)
def test_split_url(url: str, root: str, openai: str, named: str | None) -> None:
    assert split_url(url) == (root, openai, named)


def test_split_url_rejects_other_schemes() -> None:
    with pytest.raises(BenchError):
        split_url("ftp://h/x")


def run_detect(routes: dict[str, object], url: str = "http://h:1", **kwargs: object) -> Endpoint:
    def handler(request: httpx.Request) -> httpx.Response:
        body = routes.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"error": "not found"})
        return httpx.Response(200, json=body, headers={"server": "test-server"})

    async def go() -> Endpoint:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await detect(client, url, **kwargs)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_llamacpp_server_gets_the_native_endpoint() -> None:
    ep = run_detect({"/props": {"default_generation_settings": {"n_ctx": 8192}, "total_slots": 4, "build_info": "b1"}, "/v1/models": {"data": [{"id": "qwen.gguf", "owned_by": "llamacpp"}]}})
    assert ep.protocol.name == "llamacpp" and ep.engine == "llama.cpp"
    assert ep.request_url == "http://h:1/completion"
    assert ep.server["props"]["n_ctx"] == 8192 and ep.server["server_header"] == "test-server"
    assert ep.supports_ignore_eos and ep.model == "qwen.gguf"


def test_ollama_server_gets_api_generate_and_its_first_model() -> None:
    ep = run_detect({"/api/version": {"version": "0.6.0"}, "/api/tags": {"models": [{"name": "llama3.1:8b"}]}, "/api/show": {"details": {"quantization_level": "Q4_K_M"}}}, url="http://h:1/v1")
    assert ep.protocol.name == "ollama" and ep.model == "llama3.1:8b"
    assert ep.request_url == "http://h:1/api/generate"
    assert ep.server["ollama_version"] == "0.6.0"
    assert not ep.supports_ignore_eos


def test_vllm_is_recognised_from_owned_by() -> None:
    ep = run_detect({"/v1/models": {"data": [{"id": "meta-llama/Llama-3.1-8B", "owned_by": "vllm"}]}, "/version": {"version": "0.8.0"}})
    assert ep.protocol.name == "openai-completions" and ep.engine == "vllm"
    assert ep.supports_ignore_eos and ep.supports_continuous_usage
    assert ep.server["version"] == {"version": "0.8.0"}


def test_unknown_openai_server_and_explicit_protocol() -> None:
    ep = run_detect({"/v1/models": {"data": [{"id": "m"}]}}, protocol="openai-chat", model="chosen")
    assert ep.protocol.name == "openai-chat" and ep.model == "chosen" and ep.fixed
    assert ep.engine is None and not ep.supports_ignore_eos
    assert ep.request_url == "http://h:1/v1/chat/completions"


def test_full_endpoint_url_fixes_the_protocol() -> None:
    ep = run_detect({"/props": {"total_slots": 1}}, url="http://h:1/v1/chat/completions")
    assert ep.protocol.name == "openai-chat" and ep.fixed


def test_unreachable_server_is_one_clear_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("All connection attempts failed", request=request)

    async def go() -> Endpoint:
        async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
            return await detect(client, "http://h:1")

    with pytest.raises(BenchError, match="cannot reach http://h:1"):
        asyncio.run(go())


def test_ollama_without_models_asks_for_one() -> None:
    with pytest.raises(BenchError, match="no models"):
        run_detect({"/api/version": {"version": "1"}, "/api/tags": {"models": []}})
