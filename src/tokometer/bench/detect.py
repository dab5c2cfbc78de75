"""Find out what a URL speaks and who is behind it, before sending any generation.

A base URL with or without `/v1` works, and so does a full endpoint URL
(`.../v1/chat/completions`, `.../completion`, `.../api/generate`), which fixes the protocol.
Probes, all cheap GETs: `/api/version` (Ollama), `/props` (llama.cpp server), `/v1/models`
(OpenAI-compatible; `owned_by` names vLLM or SGLang), `/version` (vLLM). Their answers are kept
verbatim (trimmed) as the server's identity, with the `Server` header.

Auto picks the protocol that gives the most: Ollama native (eval counts and durations), llama.cpp
native (`timings`, `cache_prompt`), else OpenAI completions (no chat template in the way), with a
fall-back to chat when a server has no completions endpoint.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from tokometer.bench.protocols import PROTOCOLS, Protocol, get_protocol
from tokometer.errors import BenchError

_ENDPOINT_SUFFIXES = (
    ("/v1/chat/completions", "openai-chat", True),
    ("/chat/completions", "openai-chat", True),
    ("/v1/completions", "openai-completions", True),
    ("/completions", "openai-completions", True),
    ("/completion", "llamacpp", False),
    ("/api/generate", "ollama", False),
)
_KEEP_PROPS = ("build_info", "model_path", "total_slots", "n_ctx", "chat_template_name", "modalities")
PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send generations, and what the server said about itself."""

    url: str
    root: str
    openai_base: str
    protocol: Protocol
    model: str | None
    engine: str | None  # ollama | llama.cpp | vllm | sglang | None (unknown OpenAI-compatible)
    server: dict[str, Any] = field(default_factory=dict)
    supports_ignore_eos: bool = False
    supports_continuous_usage: bool = False
    fixed: bool = False  # the user named the endpoint or protocol: no fall-back

    @property
    def request_url(self) -> str:
        base = self.openai_base if self.protocol.base == "openai" else self.root
        return base + self.protocol.path

    def with_protocol(self, name: str) -> Endpoint:
        from dataclasses import replace

        return replace(self, protocol=get_protocol(name))

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "request_url": self.request_url,
            "protocol": self.protocol.name,
            "model": self.model,
            "engine": self.engine,
            "identity": self.server,
        }


def split_url(url: str) -> tuple[str, str, str | None]:
    """(root, openai_base, protocol named by the path or None)."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if not parts.netloc or parts.scheme not in ("http", "https"):
        raise BenchError(f"not an http(s) URL: {url!r}")
    path = parts.path.rstrip("/")
    named: str | None = None
    bare_openai = False  # ".../chat/completions" under a prefix that is not /v1
    for suffix, protocol, openai in _ENDPOINT_SUFFIXES:
        if path.endswith(suffix):
            named = protocol
            path = path[: -len(suffix)]
            if openai and suffix.startswith("/v1"):
                path = path + "/v1"
            bare_openai = openai and not path.endswith("/v1")
            break
    clean = urlunsplit((parts.scheme, parts.netloc, path, "", "")).rstrip("/")
    if bare_openai:
        return clean, clean, named
    if clean.endswith("/v1"):
        return clean[: -len("/v1")], clean, named
    return clean, clean + "/v1", named


async def _get_json(client: httpx.AsyncClient, url: str) -> tuple[int | None, Any, str | None, str | None]:
    """(status, JSON or None, Server header, transport error) — never raises."""
    try:
        response = await client.get(url, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError as exc:
        return None, None, None, f"{type(exc).__name__}: {exc}".strip()
    try:
        data = response.json() if response.status_code < 400 else None
    except ValueError:
        data = None
    return response.status_code, data, response.headers.get("server"), None


def _trim(value: Any, depth: int = 0) -> Any:
    """Identity answers can be huge (chat templates); keep scalars and short strings."""
    if isinstance(value, dict):
        return {k: _trim(v, depth + 1) for k, v in list(value.items())[:40] if depth < 3}
    if isinstance(value, list):
        return [_trim(v, depth + 1) for v in value[:20]]
    if isinstance(value, str) and len(value) > 300:
        return value[:300] + "..."
    return value


async def detect(
    client: httpx.AsyncClient,
    url: str,
    *,
    protocol: str = "auto",
    model: str | None = None,
) -> Endpoint:
    """Probe `url` and return the endpoint to benchmark; BenchError when nothing answers."""
    if protocol != "auto" and protocol not in PROTOCOLS:
        raise BenchError(f"unknown protocol {protocol!r} (choose from auto, {', '.join(PROTOCOLS)})")
    root, openai_base, named = split_url(url)
    probes = {
        "ollama": f"{root}/api/version",
        "llamacpp": f"{root}/props",
        "models": f"{openai_base}/models",
        "version": f"{root}/version",
    }
    answers = dict(zip(probes, await asyncio.gather(*(_get_json(client, u) for u in probes.values())), strict=True))
    if all(status is None for status, _, _, _ in answers.values()):
        reason = next(err for _, _, _, err in answers.values() if err)
        raise BenchError(f"cannot reach {url}: {reason}")
    server: dict[str, Any] = {}
    header = next((h for _, _, h, _ in answers.values() if h), None)
    if header:
        server["server_header"] = header

    _, ollama, _, _ = answers["ollama"]
    _, props, _, _ = answers["llamacpp"]
    _, models, _, _ = answers["models"]
    _, version, _, _ = answers["version"]
    is_ollama = isinstance(ollama, dict) and "version" in ollama
    is_llamacpp = isinstance(props, dict) and any(
        k in props for k in ("default_generation_settings", "total_slots", "build_info")
    )
    model_ids: list[str] = []
    owners: set[str] = set()
    if isinstance(models, dict) and isinstance(models.get("data"), list):
        for entry in models["data"]:
            if isinstance(entry, dict) and entry.get("id"):
                model_ids.append(str(entry["id"]))
                owners.add(str(entry.get("owned_by", "")).lower())
        server["models"] = model_ids[:20]
    engine: str | None = None
    if is_ollama:
        engine = "ollama"
        server["ollama_version"] = ollama.get("version")
    elif is_llamacpp:
        engine = "llama.cpp"
        server["props"] = {k: _trim(props[k]) for k in _KEEP_PROPS if k in props}
        settings = props.get("default_generation_settings")
        if isinstance(settings, dict) and "n_ctx" in settings:
            server["props"]["n_ctx"] = settings["n_ctx"]
    elif "vllm" in owners:
        engine = "vllm"
    elif "sglang" in owners:
        engine = "sglang"
    if isinstance(version, dict) and not is_ollama and version.get("version"):
        server["version"] = _trim(version)

    chosen = named or (protocol if protocol != "auto" else None)
    if chosen is None:
        chosen = "ollama" if is_ollama else "llamacpp" if is_llamacpp else "openai-completions"
    if model is None:
        if model_ids:
            model = model_ids[0]
        elif is_ollama:
            tags_status, tags, _, _ = await _get_json(client, f"{root}/api/tags")
            names = [m.get("name") for m in (tags or {}).get("models", []) if isinstance(m, dict)]
            if not names:
                raise BenchError(f"{url} is an Ollama server with no models; pull one or pass --model")
            model = str(names[0])
    if chosen == "ollama" and not model:
        raise BenchError("Ollama needs a model name: pass --model")
    if is_ollama and model:
        show = await _show_ollama(client, root, model)
        if show:
            server["ollama_show"] = show
    return Endpoint(
        url=url,
        root=root,
        openai_base=openai_base,
        protocol=get_protocol(chosen),
        model=model,
        engine=engine,
        server=server,
        supports_ignore_eos=engine in ("llama.cpp", "vllm", "sglang"),
        supports_continuous_usage=engine == "vllm",
        fixed=named is not None or protocol != "auto",
    )


async def _show_ollama(client: httpx.AsyncClient, root: str, model: str) -> dict[str, Any] | None:
    try:
        response = await client.post(f"{root}/api/show", json={"model": model}, timeout=PROBE_TIMEOUT_S)
        data = response.json() if response.status_code < 400 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return {k: _trim(data[k]) for k in ("details", "model_info") if k in data}
