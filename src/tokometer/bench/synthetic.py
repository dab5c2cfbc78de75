"""A synthetic LLM server that streams at a known rate and TTFT, and can misbehave on purpose.

It speaks the same four protocols as the client (OpenAI chat and completions over SSE, llama.cpp
native `/completion`, Ollama `/api/generate` NDJSON) on plain asyncio streams, so one process
can hold hundreds of streams. Token i of a request is written at
`t_recv + ttft + prompt_tokens / prefill_tok_s + i * tokens_per_event / tok_s` on the server's
monotonic clock (absolute deadlines, so lateness never accumulates): the true decode rate is
`tok_s` and the true TTFT is `ttft_s` plus prefill, which is what `benchmarks/client_accuracy.py`
holds the client to.

Faults, cycled over generation requests (`faults=("", "drop", "http500")`): `drop` (close the
socket mid-stream), `http500`, `inband-error` (an error object inside a 200 stream), `malformed`
(broken JSON), `stall` (stop sending, keep the socket open), `trickle` (every event written a few
bytes at a time), `empty` (a stream with no tokens). Hostile values, sent as the second event:
`wrong-choices` (`"choices": 5`), `wrong-text` (`"text": 5`), `nan-count` / `inf-count`
(`completion_tokens` NaN / Infinity), `huge-count` (10^12 tokens), `nested` (JSON nested 100,000
deep), `huge-line` (a 2 MiB line); and `endless` (ignores max_tokens), `html` (an HTML page with
200), `redirect` (307), `slow-connect` (waits `stall_s` before answering), `overcount` (usage says
50 tokens per token sent).

    python -m tokometer.bench.synthetic --tok-s 200 --ttft-ms 100 --port 8000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

FAULTS = (
    "", "drop", "http500", "inband-error", "malformed", "stall", "trickle", "empty", "wrong-choices", "wrong-text",
    "nan-count", "inf-count", "huge-count", "nested", "huge-line", "endless", "html", "redirect", "slow-connect",
    "overcount",
)
_BAD_EVENTS = {
    "wrong-choices": b'data: {"choices": 5}\n\n',
    "wrong-text": b'data: {"choices": [{"index": 0, "text": 5}]}\n\n',
    "nan-count": b'data: {"choices": [], "usage": {"completion_tokens": NaN}}\n\n',
    "inf-count": b'data: {"choices": [], "usage": {"completion_tokens": Infinity}}\n\n',
    "huge-count": b'data: {"choices": [], "usage": {"completion_tokens": 1000000000000}}\n\n',
    "nested": b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n",
    "huge-line": b'data: {"choices": [{"index": 0, "text": "' + b"x" * (2 << 20) + b'"}]}\n\n',
}
FLAVORS = ("openai", "vllm", "llamacpp", "ollama")


@dataclass(frozen=True)
class SyntheticConfig:
    tok_s: float = 200.0
    ttft_s: float = 0.05
    prefill_tok_s: float | None = None
    tokens_per_event: int = 1
    flavor: str = "openai"
    model: str = "synthetic"
    faults: tuple[str, ...] = ()
    eos_after: int | None = None  # without ignore_eos, stop after this many tokens
    drop_after: int = 3
    stall_s: float = 3600.0
    usage: bool = True  # honour stream_options.include_usage
    tokenize: bool = True  # answer POST /extras/tokenize (llama-cpp-python's endpoint)


@dataclass
class ServedRequest:
    """Server-side truth for one generation: when it was received and when tokens were written."""

    path: str
    fault: str
    prompt_tokens: int
    t_recv: float
    token_times: list[float] = field(default_factory=list)


class _Closed(Exception):
    pass


class SyntheticServer:
    def __init__(self, config: SyntheticConfig | None = None) -> None:
        self.config = config or SyntheticConfig()
        for fault in self.config.faults:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r} (known: {', '.join(f for f in FAULTS if f)})")
        if self.config.flavor not in FLAVORS:
            raise ValueError(f"unknown flavor {self.config.flavor!r}")
        self.served: list[ServedRequest] = []
        self._generations = 0
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._server = await asyncio.start_server(self._handle, host, port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    # --- HTTP plumbing -------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, value = line.split(":", 1)
                        headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                keep = await self._route(method, path.split("?")[0], body, writer)
                if not keep:
                    return
        except (_Closed, ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    def _json(writer: asyncio.StreamWriter, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        reason = {200: "OK", 404: "Not Found", 400: "Bad Request", 500: "Internal Server Error"}.get(status, "")
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nServer: tokometer-synthetic\r\n\r\n".encode()
            + data
        )

    async def _route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        flavor = self.config.flavor
        if method == "GET":
            if path in ("/v1/models", "/models"):
                owner = {"vllm": "vllm", "llamacpp": "llamacpp"}.get(flavor, "tokometer")
                self._json(writer, 200, {"object": "list", "data": [{"id": self.config.model, "object": "model", "owned_by": owner}]})
            elif path == "/props" and flavor == "llamacpp":
                self._json(writer, 200, {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1, "model_path": f"{self.config.model}.gguf", "build_info": "synthetic"})
            elif path == "/version" and flavor == "vllm":
                self._json(writer, 200, {"version": "synthetic"})
            elif path == "/api/version" and flavor == "ollama":
                self._json(writer, 200, {"version": "0.0.0-synthetic"})
            elif path == "/api/tags" and flavor == "ollama":
                self._json(writer, 200, {"models": [{"name": self.config.model, "model": self.config.model}]})
            elif path == "/health":
                self._json(writer, 200, {"status": "ok"})
            else:
                self._json(writer, 404, {"error": "not found"})
            await writer.drain()
            return True
        if method == "POST" and path == "/extras/tokenize" and self.config.tokenize:
            text = json.loads(body or b"{}").get("input", "")
            self._json(writer, 200, {"tokens": list(range(max(1, len(str(text).split()))))})
            await writer.drain()
            return True
        routes = {
            "/v1/completions": "openai-completions",
            "/v1/chat/completions": "openai-chat",
            "/completion": "llamacpp",
            "/api/generate": "ollama",
        }
        protocol = routes.get(path)
        if method != "POST" or protocol is None or (protocol == "ollama") != (flavor == "ollama"):
            self._json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            await writer.drain()
            return True
        if protocol == "llamacpp" and flavor != "llamacpp":
            self._json(writer, 404, {"error": {"message": "not found"}})
            await writer.drain()
            return True
        try:
            request = json.loads(body or b"{}")
        except json.JSONDecodeError:
            self._json(writer, 400, {"error": {"message": "bad json"}})
            await writer.drain()
            return True
        return await self._generate(protocol, request, writer)

    # --- generation ------------------------------------------------------------------------------

    async def _generate(self, protocol: str, request: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        loop = asyncio.get_running_loop()
        t_recv = loop.time()
        cfg = self.config
        faults = cfg.faults
        fault = faults[self._generations % len(faults)] if faults else ""
        self._generations += 1
        prompt = request.get("prompt")
        if prompt is None:
            prompt = " ".join(str(m.get("content", "")) for m in request.get("messages", []))
        prompt_tokens = max(1, len(str(prompt).split()))
        served = ServedRequest(protocol, fault, prompt_tokens, t_recv)
        self.served.append(served)
        if fault == "http500":
            self._json(writer, 500, {"error": {"message": "synthetic internal error", "type": "server_error"}})
            await writer.drain()
            return True
        if fault == "redirect":
            writer.write(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://elsewhere.example/v1/completions\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            return True
        if fault == "html":
            page = b"<!doctype html><html><body>Please log in</body></html>"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page))
            await writer.drain()
            return True
        if fault == "slow-connect":
            await asyncio.sleep(cfg.stall_s)
        wanted = int(request.get("max_tokens") or request.get("n_predict") or request.get("options", {}).get("num_predict") or 16)
        ignore_eos = bool(request.get("ignore_eos"))
        n_tokens = wanted if (ignore_eos or cfg.eos_after is None) else min(wanted, cfg.eos_after)
        finish = "length" if n_tokens >= wanted else "stop"
        if fault == "empty":
            n_tokens = 0
        if fault == "endless":
            n_tokens = 10**9
        stream_options = request.get("stream_options") or {}
        usage_wanted = cfg.usage and bool(stream_options.get("include_usage"))
        continuous = cfg.flavor == "vllm" and bool(stream_options.get("continuous_usage_stats"))
        content_type = "application/x-ndjson" if protocol == "ollama" else "text/event-stream"
        writer.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n"
            f"Cache-Control: no-cache\r\nServer: tokometer-synthetic\r\n\r\n".encode()
        )

        async def send(payload: bytes) -> None:
            if fault == "trickle":
                for i in range(0, len(payload), 7):
                    writer.write(b"%x\r\n%s\r\n" % (len(payload[i : i + 7]), payload[i : i + 7]))
                    await writer.drain()
                    await asyncio.sleep(0.0005)
            else:
                writer.write(b"%x\r\n%s\r\n" % (len(payload), payload))

        if protocol == "openai-chat":
            await send(b'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n')
        t_first = t_recv + cfg.ttft_s + (prompt_tokens / cfg.prefill_tok_s if cfg.prefill_tok_s else 0.0)
        per_event = max(1, cfg.tokens_per_event)
        n_events = -(-n_tokens // per_event)
        sent = 0
        for i in range(n_events):
            deadline = t_first + i * per_event / cfg.tok_s
            delay = deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            k = min(per_event, n_tokens - sent)
            sent += k
            text = "".join(f" w{sent - k + j}" for j in range(k))
            if fault == "malformed" and i == 1:
                await send(b'data: {"choices": [{"text": "oops"\n\n')
            if fault in _BAD_EVENTS and i == 1:
                await send(_BAD_EVENTS[fault])
                await writer.drain()
            await send(self._token_event(protocol, text, sent, prompt_tokens, continuous))
            served.token_times.append(loop.time())
            if fault == "inband-error" and i == 0:
                await send(b'data: {"error": {"message": "synthetic overload", "type": "server_error", "code": 503}}\n\n')
                await send(b"data: [DONE]\n\n")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return True
            if fault == "drop" and sent >= cfg.drop_after:
                await writer.drain()
                transport = writer.transport
                transport.abort()
                raise _Closed
            if fault == "stall" and i == 0:
                await writer.drain()
                await asyncio.sleep(cfg.stall_s)
                raise _Closed
            if i % 16 == 0:
                await writer.drain()
        await self._final(protocol, send, finish, sent, prompt_tokens, usage_wanted, t_recv, t_first, served)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    @staticmethod
    def _token_event(protocol: str, text: str, sent: int, prompt_tokens: int, continuous: bool) -> bytes:
        quoted = json.dumps(text)
        if protocol == "openai-completions":
            usage = (
                f',"usage":{{"prompt_tokens":{prompt_tokens},"completion_tokens":{sent},"total_tokens":{prompt_tokens + sent}}}'
                if continuous
                else ""
            )
            return f'data: {{"object":"text_completion","choices":[{{"index":0,"text":{quoted},"finish_reason":null}}]{usage}}}\n\n'.encode()
        if protocol == "openai-chat":
            return f'data: {{"object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":{quoted}}},"finish_reason":null}}]}}\n\n'.encode()
        if protocol == "llamacpp":
            return f'data: {{"content":{quoted},"stop":false}}\n\n'.encode()
        return f'{{"model":"synthetic","response":{quoted},"done":false}}\n'.encode()

    async def _final(
        self,
        protocol: str,
        send: Any,
        finish: str,
        sent: int,
        prompt_tokens: int,
        usage_wanted: bool,
        t_recv: float,
        t_first: float,
        served: ServedRequest,
    ) -> None:
        times = served.token_times
        decode_ms = (times[-1] - times[0]) * 1e3 if len(times) > 1 else 0.0
        prompt_ms = (t_first - t_recv) * 1e3
        timings = {
            "prompt_n": prompt_tokens,
            "prompt_ms": prompt_ms,
            "prompt_per_second": prompt_tokens / (prompt_ms / 1e3) if prompt_ms > 0 else None,
            "predicted_n": sent,
            "predicted_ms": decode_ms,
            "predicted_per_second": sent / (decode_ms / 1e3) if decode_ms > 0 else None,
            "cache_n": 0,
        }
        claimed = sent * 50 if served.fault == "overcount" else sent
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": claimed, "total_tokens": prompt_tokens + claimed}
        if protocol in ("openai-completions", "openai-chat"):
            choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
            if protocol == "openai-chat":
                choice["delta"] = {}
            else:
                choice["text"] = ""
            final: dict[str, Any] = {"choices": [choice]}
            if self.config.flavor == "llamacpp":
                final["timings"] = timings
            await send(b"data: " + json.dumps(final).encode() + b"\n\n")
            if usage_wanted:
                await send(b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n")
            await send(b"data: [DONE]\n\n")
        elif protocol == "llamacpp":
            payload = {
                "content": "",
                "stop": True,
                "stop_type": "limit" if finish == "length" else "eos",
                "tokens_predicted": sent,
                "tokens_evaluated": prompt_tokens,
                "timings": timings,
            }
            await send(b"data: " + json.dumps(payload).encode() + b"\n\n")
        else:
            payload = {
                "model": self.config.model,
                "response": "",
                "done": True,
                "done_reason": finish,
                "total_duration": int((times[-1] - t_recv) * 1e9) if times else 0,
                "load_duration": 0,
                "prompt_eval_count": prompt_tokens,
                "prompt_eval_duration": int(prompt_ms * 1e6),
                "eval_count": sent,
                "eval_duration": int(decode_ms * 1e6),
            }
            await send(json.dumps(payload).encode() + b"\n")


@contextlib.contextmanager
def serve_in_thread(config: SyntheticConfig | None = None) -> Iterator[SyntheticServer]:
    """Run a server on 127.0.0.1 in a daemon thread for the duration of a `with` block."""
    server = SyntheticServer(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="synthetic-llm-server", daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("synthetic server did not start")
    try:
        yield server
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Synthetic LLM server streaming at a known rate.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tok-s", type=float, default=200.0)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--prefill-tok-s", type=float, default=None)
    parser.add_argument("--tokens-per-event", type=int, default=1)
    parser.add_argument("--flavor", choices=FLAVORS, default="openai")
    parser.add_argument("--faults", default="", help="comma-separated faults cycled over requests")
    args = parser.parse_args(argv)
    config = SyntheticConfig(
        tok_s=args.tok_s,
        ttft_s=args.ttft_ms / 1e3,
        prefill_tok_s=args.prefill_tok_s,
        tokens_per_event=args.tokens_per_event,
        flavor=args.flavor,
        faults=tuple(args.faults.split(",")) if args.faults else (),
    )

    async def serve() -> None:
        server = SyntheticServer(config)
        url = await server.start(port=args.port)
        print(f"listening on {url}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
