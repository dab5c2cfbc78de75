"""Prompt counts from a server's tokenizer: the first endpoint that answers is kept, and a server
with none is asked once, not once a request."""

from __future__ import annotations

import asyncio
import json

import httpx

from tokometer.bench.detect import Endpoint
from tokometer.bench.prompt_counts import PromptCounter
from tokometer.bench.protocols import get_protocol

EP = Endpoint(url="http://fake:1", root="http://fake:1", openai_base="http://fake:1/v1", protocol=get_protocol("openai-completions"), model="m", engine=None)


def _count_twice(transport: httpx.MockTransport) -> tuple[list[int | None], PromptCounter]:
    counter = PromptCounter()

    async def go() -> list[int | None]:
        async with httpx.AsyncClient(transport=transport) as client:
            return [await counter.count(client, EP, "one two three", seq=7), await counter.count(client, EP, "four five", seq=8)]

    return asyncio.run(go()), counter


def test_the_endpoint_that_answered_is_the_only_one_asked_again() -> None:
    asked: list[tuple[str, dict[str, object]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append((request.url.path, body))
        if request.url.path == "/tokenize" and "prompt" in body:  # vLLM's shape, the second tried
            return httpx.Response(200, json={"count": len(str(body["prompt"]).split()) + 1})
        return httpx.Response(404)

    counts, counter = _count_twice(httpx.MockTransport(handler))
    assert counts == [4, 3]
    assert counter.counts == {7: 4, 8: 3}
    assert [path for path, _ in asked] == ["/tokenize", "/tokenize", "/tokenize"]
    assert asked[2][1] == {"model": "m", "prompt": "four five"}


def test_a_server_with_no_tokenizer_is_asked_once_then_left_alone() -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return httpx.Response(404)

    counts, counter = _count_twice(httpx.MockTransport(handler))
    assert counts == [None, None]
    assert asked == ["/tokenize", "/tokenize", "/extras/tokenize"]
    assert counter.counts == {}
