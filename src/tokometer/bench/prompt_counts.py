"""Prompt token counts from the server's own tokenizer, for servers that stream no usage.

Without a usage block a request's prompt tokens are unknown, and TTFT per prompt token, the
prefill speed and the cold run's tokens per word (which sizes every long prompt) need them. Three
tokenize endpoints are common; `PromptCounter` tries them in turn, keeps the first that answers,
and stops asking once none has. The runner counts the cold prompt at once and the other prompts
only after the timed part, within a time budget, so counting never runs beside a timed stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

import httpx

from tokometer.bench.client import Exchange, RequestRecord
from tokometer.bench.detect import Endpoint

MakeBody = Callable[[str], dict[str, Any]]


def _candidates(ep: Endpoint) -> list[tuple[str, MakeBody]]:
    model = ep.model
    return [
        (f"{ep.root}/tokenize", lambda text: {"content": text}),  # llama.cpp server
        (f"{ep.root}/tokenize", lambda text: {"model": model, "prompt": text}),  # vLLM, SGLang
        (f"{ep.root}/extras/tokenize", lambda text: {"input": text, "model": model}),  # llama-cpp-python
    ]


class PromptCounter:
    """Prompt tokens by request number, counted by the first tokenize endpoint the server answers."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}  # request seq -> prompt tokens
        self._at: tuple[str, MakeBody] | None = None
        self._missing = False

    async def count(self, client: httpx.AsyncClient, ep: Endpoint, text: str, seq: int | None = None) -> int | None:
        """Tokens in `text` by the server's tokenizer, kept as request `seq`'s count; None when the
        server has no tokenize endpoint."""
        if self._missing:
            return None
        candidates = [self._at] if self._at else _candidates(ep)
        for url, make_body in candidates:
            try:
                response = await client.post(url, json=make_body(text), timeout=10.0)
                data = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                data = None
            count = None
            if isinstance(data, dict):
                if isinstance(data.get("tokens"), list):
                    count = len(data["tokens"])
                elif isinstance(data.get("count"), int):
                    count = int(data["count"])
            if count is not None:
                self._at = (url, make_body)
                if seq is not None:
                    self.counts[seq] = count
                return count
        self._missing = True
        return None

    async def count_unreported(self, client: httpx.AsyncClient, ep: Endpoint, exchanges: Iterable[Exchange], budget_s: float = 30.0) -> None:
        """After the timed part: count the prompts of requests whose server gave no prompt count."""
        if self._missing:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget_s
        for exchange in exchanges:
            if exchange.seq in self.counts or not exchange.prompt or exchange.failure:
                continue
            if exchange.record().prompt_tokens is not None or loop.time() > deadline:
                continue
            if await self.count(client, ep, exchange.prompt, exchange.seq) is None:
                return

    def fill(self, record: RequestRecord) -> RequestRecord:
        """`record` with its counted prompt tokens where the server reported none."""
        count = self.counts.get(record.seq)
        if record.prompt_tokens is None and count is not None:
            return replace(record, prompt_tokens=count, prompt_tokens_source="tokenize")
        return record


__all__ = ["PromptCounter"]
