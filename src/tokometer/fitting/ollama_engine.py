"""Which of Ollama's two GGUF runners a measured row ran: llama.cpp's, or Ollama's own Go engine.

Ollama starts its Go "ollama engine" runner (runner/ollamarunner; model code in model/models/*, ggml's
kernels underneath) for a GGUF model whose architecture is listed in fs/ggml/ggml.go
`KV.OllamaEngineRequired`, and llama.cpp's runner (runner/llamarunner) for the others (llm/server.go
`NewLlamaServer`: `envconfig.NewEngine() || f.KV().OllamaEngineRequired()`). The two run different graph
code and scheduling, so a row of one says little about the other: the reading names the engine
`ollama-engine` (engines.toml, a child of ollama fitted apart) for the architectures on that list at the
row's Ollama version. Sources: https://github.com/ollama/ollama, fs/ggml/ggml.go at each release tag; the
first release that lists each architecture is below (read from the tags v0.6.0 ... v0.23.1).

A row without a version is read by its measurement date against that release's date (a reader may run an
older Ollama: an assumption, said here); one with neither keeps `ollama`. Safetensors models on Apple
silicon go to a third runner (x/mlxrunner, 0.19+: the NVFP4/INT4 tags), not read here.
"""

from __future__ import annotations

import re
from typing import Any

OLLAMA = "ollama"
OLLAMA_ENGINE = "ollama-engine"

# HF model_type of a catalog preset -> (GGUF architecture, first Ollama release whose OllamaEngineRequired
# lists it, that release's date)
OLLAMA_ENGINE_SINCE: dict[str, tuple[str, tuple[int, int, int], str]] = {
    "gemma3": ("gemma3", (0, 6, 0), "2025-03-11"),
    "gemma3_text": ("gemma3", (0, 6, 0), "2025-03-11"),
    "gemma3n": ("gemma3n", (0, 9, 3), "2025-06-26"),
    "gemma4": ("gemma4", (0, 20, 0), "2026-04-02"),
    "gemma4_text": ("gemma4", (0, 20, 0), "2026-04-02"),
    "gpt_oss": ("gptoss", (0, 11, 0), "2025-08-05"),
    "llama4": ("llama4", (0, 6, 7), "2025-04-30"),
    "llama4_text": ("llama4", (0, 6, 7), "2025-04-30"),
    "mistral3": ("mistral3", (0, 6, 5), "2025-04-04"),
    "qwen3": ("qwen3", (0, 12, 0), "2025-09-18"),
    "qwen3_moe": ("qwen3moe", (0, 12, 2), "2025-09-24"),
    "qwen3_5_text": ("qwen35", (0, 17, 1), "2026-02-25"),
    "qwen3_5_moe_text": ("qwen35moe", (0, 17, 1), "2026-02-25"),
    "qwen3_next": ("qwen3next", (0, 15, 5), "2026-02-05"),
    "deepseek_v3": ("deepseek2", (0, 13, 0), "2025-11-18"),
    "nemotron_h": ("nemotron_h", (0, 17, 1), "2026-02-25"),
}


def _version(text: str) -> tuple[int, int, int] | None:
    found = re.search(r"\b(\d+)\.(\d+)(?:\.(\d+))?\b", text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


def ollama_runner(engine: str | None, model_type: str | None, version: str, measured_date: str) -> str | None:
    """`ollama-engine` when an Ollama row's model architecture ran on Ollama's own engine, else `engine`."""
    if engine != OLLAMA or not model_type or model_type not in OLLAMA_ENGINE_SINCE:
        return engine
    _, since, since_date = OLLAMA_ENGINE_SINCE[model_type]
    stated = _version(version)
    if stated is not None:
        return OLLAMA_ENGINE if stated >= since else engine
    if re.match(r"\d{4}-\d{2}", measured_date):
        return OLLAMA_ENGINE if measured_date[:10] >= since_date else engine
    return engine


def runner_for_case(case: Any, engine: str | None, preset: Any | None) -> str | None:
    """The engine a row ran on, once its model preset is known (`validation.estimate_kwargs`)."""
    model_type = preset.config.get("model_type") if preset is not None else None
    return ollama_runner(engine, model_type, case.text("engine_version"), case.text("measured_date"))
