"""The four wire protocols tokometer speaks, and how to tell which one a server answers.

- `openai-chat`        POST /v1/chat/completions, SSE (`stream_options.include_usage`)
- `openai-completions` POST /v1/completions, SSE
- `llamacpp`           POST /completion (llama.cpp server's native endpoint, with `timings`)
- `ollama`             POST /api/generate, NDJSON (`eval_count`, `eval_duration`)

Each protocol builds a request body and reads one decoded JSON event into a `Parsed`: the text
it carries, whether it carries a generated token (role-only, usage-only and `[DONE]` events never
do), the server's counts and timings verbatim, a finish reason, an in-band error.

Every server value is checked as it is read: a field of the wrong type (`"choices": 5`,
`"text": 5`), a count that is not a whole number in [0, 10^9], a duration that is negative or
not finite makes `Parsed.invalid` name the field, and that request fails with kind `invalid`;
nothing a server sends raises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_COUNT = 10**9  # no request has more tokens than this; a larger count is a broken server


class InvalidEvent(ValueError):
    """A server value of the wrong type or out of range; the message names the field."""

PROTOCOLS = ("openai-chat", "openai-completions", "llamacpp", "ollama")


@dataclass(frozen=True, slots=True)
class Parsed:
    """What one stream event says."""

    text: str = ""
    is_token: bool = False
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    finish_reason: str | None = None
    error: str | None = None
    done: bool = False
    invalid: str | None = None  # a value of the wrong type or range, named


def _type_name(value: Any) -> str:
    return "null" if value is None else {"str": "text", "dict": "an object", "list": "a list"}.get(type(value).__name__, repr(value)[:40])


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidEvent(f"`{key}` is {_type_name(value)}, expected text")
    return value


def _object(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, dict):
        raise InvalidEvent(f"`{key}` is {_type_name(value)}, expected an object")
    return value


def check_count(value: Any, key: str) -> int | None:
    """A token count: None, or a whole number in [0, MAX_COUNT] (3.0 is accepted as 3)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidEvent(f"`{key}` is {_type_name(value)}, expected a whole number")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InvalidEvent(f"`{key}` is {value!r}, expected a whole number")
    if not 0 <= value <= MAX_COUNT:
        raise InvalidEvent(f"`{key}` is {value:g}, outside 0..{MAX_COUNT:g}")
    return int(value)


def check_duration(value: Any, key: str) -> float | None:
    """A duration or rate: None, or a finite number >= 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidEvent(f"`{key}` is {value!r}, expected a finite number >= 0")
    return float(value)


_USAGE_COUNTS = ("completion_tokens", "prompt_tokens", "total_tokens")
_TIMING_COUNTS = ("predicted_n", "prompt_n", "cache_n", "eval_count", "prompt_eval_count")
_TIMING_DURATIONS = (
    "predicted_ms", "prompt_ms", "predicted_per_second", "prompt_per_second", "predicted_per_token_ms",
    "prompt_per_token_ms", "eval_duration", "prompt_eval_duration", "total_duration", "load_duration",
)


def _usage(obj: dict[str, Any]) -> dict[str, Any] | None:
    usage = _object(obj, "usage")
    if usage is None:
        return None
    for key in _USAGE_COUNTS:
        check_count(usage.get(key), f"usage.{key}")
    details = _object(usage, "prompt_tokens_details")
    if details is not None:
        check_count(details.get("cached_tokens"), "usage.prompt_tokens_details.cached_tokens")
    return usage


def _timings(timings: dict[str, Any] | None) -> dict[str, Any] | None:
    if timings is None:
        return None
    for key in _TIMING_COUNTS:
        check_count(timings.get(key), f"timings.{key}")
    for key in _TIMING_DURATIONS:
        check_duration(timings.get(key), f"timings.{key}")
    return timings


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One generation to send: the knobs every protocol maps onto its own field names."""

    prompt: str
    max_tokens: int
    model: str | None = None
    ignore_eos: bool = False
    temperature: float = 0.0
    seed: int | None = 0
    cache_prompt: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Protocol:
    """A wire protocol: endpoint path (relative to its base), framing and field names."""

    name: str
    path: str
    framing: str  # "sse" | "ndjson"
    base: str  # "openai" (the /v1 base) or "root" (the server root)
    label: str

    def body(self, req: GenerationRequest) -> dict[str, Any]:
        if self.name in ("openai-chat", "openai-completions"):
            body: dict[str, Any] = {
                "max_tokens": req.max_tokens,
                "temperature": req.temperature,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            if self.name == "openai-chat":
                body["messages"] = [{"role": "user", "content": req.prompt}]
            else:
                body["prompt"] = req.prompt
        elif self.name == "llamacpp":
            body = {
                "prompt": req.prompt,
                "n_predict": req.max_tokens,
                "temperature": req.temperature,
                "stream": True,
                "cache_prompt": req.cache_prompt,
            }
        else:  # ollama
            options: dict[str, Any] = {"temperature": req.temperature, "num_predict": req.max_tokens}
            if req.seed is not None:
                options["seed"] = req.seed
            body = {"prompt": req.prompt, "stream": True, "raw": True, "options": options}
        if req.model and self.name != "llamacpp":
            body["model"] = req.model
        if req.seed is not None and self.name != "ollama":
            body["seed"] = req.seed
        if req.ignore_eos and self.name != "ollama":  # Ollama has no ignore_eos (ollama#12065)
            body["ignore_eos"] = True
        body.update(req.extra)
        return body

    def parse(self, obj: Any) -> Parsed:
        """One decoded event; never raises (bad values come back as `Parsed.invalid`)."""
        if not isinstance(obj, dict):
            return Parsed(invalid=f"an event is {_type_name(obj)}, expected a JSON object")
        try:
            if self.name in ("openai-chat", "openai-completions"):
                return _parse_openai(obj, chat=self.name == "openai-chat")
            if self.name == "llamacpp":
                return _parse_llamacpp(obj)
            return _parse_ollama(obj)
        except InvalidEvent as exc:
            return Parsed(invalid=str(exc))


def _error_text(value: Any) -> str:
    if isinstance(value, dict):
        message = value.get("message") or value.get("msg") or value.get("detail") or value
        code = value.get("code") or value.get("type")
        return f"{message}" + (f" ({code})" if code else "")
    return str(value)


def _parse_openai(obj: dict[str, Any], *, chat: bool) -> Parsed:
    if obj.get("error") is not None:
        return Parsed(error=_error_text(obj["error"]))
    usage = _usage(obj)
    timings = _timings(_object(obj, "timings"))  # llama.cpp extension
    choices = obj.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise InvalidEvent(f"`choices` is {_type_name(choices)}, expected a list")
    if not choices:
        return Parsed(usage=usage, timings=timings)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise InvalidEvent(f"`choices[0]` is {_type_name(choice)}, expected an object")
    if chat:
        delta = _object(choice, "delta") or {}
        content = _text(delta, "content")
        reasoning = _text(delta, "reasoning_content") or _text(delta, "reasoning")
        tool_calls = delta.get("tool_calls")
        if tool_calls is not None and not isinstance(tool_calls, list):
            raise InvalidEvent(f"`delta.tool_calls` is {_type_name(tool_calls)}, expected a list")
        is_token = bool(content) or bool(reasoning) or bool(tool_calls)
        text = content + reasoning
    else:
        text = _text(choice, "text")
        is_token = bool(text)
    return Parsed(
        text=text,
        is_token=is_token,
        usage=usage,
        timings=timings,
        finish_reason=_text(choice, "finish_reason") or None,
    )


def _parse_llamacpp(obj: dict[str, Any]) -> Parsed:
    if obj.get("error") is not None:
        return Parsed(error=_error_text(obj["error"]))
    text = _text(obj, "content")
    stop = bool(obj.get("stop"))
    finish = None
    if stop:
        kind = obj.get("stop_type")
        if kind == "limit" or obj.get("stopped_limit"):
            finish = "length"
        elif kind in ("eos", "word") or obj.get("stopped_eos") or obj.get("stopped_word"):
            finish = "stop"
        else:
            finish = str(kind) if kind else "stop"
    timings = _timings(_object(obj, "timings"))
    return Parsed(text=text, is_token=bool(text), timings=timings, finish_reason=finish, done=stop)


_OLLAMA_TIMING_KEYS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


def _parse_ollama(obj: dict[str, Any]) -> Parsed:
    if obj.get("error") is not None:
        return Parsed(error=_error_text(obj["error"]))
    text = _text(obj, "response") + _text(obj, "thinking")
    done = bool(obj.get("done"))
    timings = _timings({k: obj[k] for k in _OLLAMA_TIMING_KEYS if k in obj}) if done else None
    return Parsed(
        text=text,
        is_token=bool(text),
        timings=timings or None,
        finish_reason=(_text(obj, "done_reason") or None) if done else None,
        done=done,
    )


_CATALOG = {
    "openai-chat": Protocol("openai-chat", "/chat/completions", "sse", "openai", "OpenAI chat completions"),
    "openai-completions": Protocol("openai-completions", "/completions", "sse", "openai", "OpenAI completions"),
    "llamacpp": Protocol("llamacpp", "/completion", "sse", "root", "llama.cpp native /completion"),
    "ollama": Protocol("ollama", "/api/generate", "ndjson", "root", "Ollama /api/generate"),
}


def get_protocol(name: str) -> Protocol:
    return _CATALOG[name]


@dataclass(frozen=True)
class ServerCounts:
    """Token counts for one request, server first, with where each came from."""

    output_tokens: int | None
    output_tokens_source: str
    prompt_tokens: int | None
    cached_tokens: int | None
    server_decode_tps: float | None  # the server's own figure, reconciled to (N-1)/decode time
    server_reported_decode_tps: float | None  # verbatim (llama.cpp divides N, not N-1)
    server_prefill_ms: float | None
    server_decode_ms: float | None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def server_counts(usage: dict[str, Any] | None, timings: dict[str, Any] | None, token_events: int) -> ServerCounts:
    """Output tokens in priority order: usage.completion_tokens, timings.predicted_n, eval_count, events.

    Server decode figures are reconciled to the client's definition: llama.cpp's `predicted_ms`
    and Ollama's `eval_duration` run from the first sampled token to the last, i.e. N-1 steps,
    so `(N-1) / time` is comparable with `(N_out - 1) / (tN - t1)`.
    """
    usage = usage or {}
    timings = timings or {}
    n_out: int | None = None
    source = "events"
    for value, name in (
        (usage.get("completion_tokens"), "usage"),
        (timings.get("predicted_n"), "timings"),
        (timings.get("eval_count"), "eval_count"),
    ):
        if _int(value) is not None:
            n_out, source = _int(value), name
            break
    if n_out is None:
        n_out = token_events
    prompt = _int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    cached = _int(details.get("cached_tokens")) if details else None
    if "prompt_n" in timings:
        new = _int(timings.get("prompt_n")) or 0
        cached = _int(timings.get("cache_n")) if "cache_n" in timings else cached
        prompt = new + (cached or 0)
    elif prompt is None and "prompt_eval_count" in timings:
        prompt = _int(timings.get("prompt_eval_count"))

    decode_tps = reported = prefill_ms = decode_ms = None
    if "predicted_ms" in timings:
        decode_ms = _num(timings.get("predicted_ms"))
        n = _int(timings.get("predicted_n"))
        reported = _num(timings.get("predicted_per_second"))
        prefill_ms = _num(timings.get("prompt_ms"))
    elif "eval_duration" in timings:
        ns = _num(timings.get("eval_duration"))
        decode_ms = ns / 1e6 if ns is not None else None
        n = _int(timings.get("eval_count"))
        reported = n / (ns / 1e9) if n and ns else None
        ped = _num(timings.get("prompt_eval_duration"))
        prefill_ms = ped / 1e6 if ped is not None else None
    else:
        n = None
    if decode_ms and n and n > 1:
        decode_tps = (n - 1) / (decode_ms / 1e3)
    return ServerCounts(n_out, source, prompt, cached, decode_tps, reported, prefill_ms, decode_ms)
