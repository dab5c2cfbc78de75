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

From v0.30.0 (2026-06-01) there is no Go engine for GGUF models: ollama/ollama PR #16031 ("runner: Remove CGO
engines, use llama-server exclusively for GGML models", commit 9db4bdbad, merged 2026-05-29; first tag
v0.30.0) serves every GGML model through the upstream llama-server subprocess (llm/server.go at v0.30.0: "All
GGML models are served via the upstream llama-server subprocess"), built from the llama.cpp release pinned in
LLAMA_CPP_VERSION (b9452 at v0.30.0), with flash attention in llama.cpp's auto mode unless
OLLAMA_FLASH_ATTENTION says otherwise (llm/llama_server.go `LlamaServerFlashAttention`). A row of 0.30.0 or
later (by version, else by date) is therefore read as `ollama`, whatever its architecture
(`LLAMA_SERVER_ONLY_SINCE`).

Flash attention (`ollama_flash_attention`): Ollama does not run llama.cpp's default. With
OLLAMA_FLASH_ATTENTION unset (envconfig/config.go: default false), llm/server.go `NewLlamaServer` turns it on
only for the architectures fs/ggml/ggml.go `FlashAttention()` lists at that release (the list appears in
0.11.8 with gpt-oss, commit 85ccf7354; qwen3 in 0.12.4, gemma3 0.12.6, mistral3 0.13.2, gemma4 only from
0.20.4, commit e823bff87 after a revert). From 0.13.4 (commit bd6c1d6b4, "flash attn: add auto mode for
llama engine") the llama.cpp runner passes llama.cpp's auto mode instead, which turns it on where the
device supports it; the Go engine keeps the list. A row run without it reads its decode attention scores
through memory, as llama.cpp builds before their own default did (`validation.unfused_decode_attention`).
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


# HF model_type -> GGUF architecture, for the architectures Ollama's `FlashAttention()` has ever listed
GGUF_ARCH: dict[str, str] = {
    "gemma3": "gemma3", "gemma3_text": "gemma3", "gemma4": "gemma4", "gemma4_text": "gemma4",
    "gpt_oss": "gptoss", "qwen3": "qwen3", "qwen3_moe": "qwen3moe", "qwen3_vl": "qwen3vl",
    "qwen3_vl_moe": "qwen3vlmoe", "mistral3": "mistral3", "olmo3": "olmo3", "glm4_moe_lite": "glm4moelite",
    "lfm2": "lfm2", "lfm2_moe": "lfm2moe", "qwen3_next": "qwen3next", "qwen3_5": "qwen35",
    "qwen3_5_text": "qwen35", "qwen3_5_moe": "qwen35moe", "qwen3_5_moe_text": "qwen35moe",
    "nemotron_h": "nemotron_h", "nemotron_h_moe": "nemotron_h_moe",
}
# GGUF architecture -> (first Ollama release whose FlashAttention() lists it, that release's date), read from
# fs/ggml/ggml.go at the tags v0.11.7 ... v0.23.1
FLASH_ATTENTION_SINCE: dict[str, tuple[tuple[int, int, int], str]] = {
    "gptoss": ((0, 11, 8), "2025-08-28"),
    "qwen3": ((0, 12, 4), "2025-10-09"),
    "qwen3moe": ((0, 12, 4), "2025-10-09"),
    "gemma3": ((0, 12, 6), "2025-10-16"),
    "qwen3vl": ((0, 12, 8), "2025-10-30"),
    "qwen3vlmoe": ((0, 12, 8), "2025-10-30"),
    "mistral3": ((0, 13, 2), "2025-12-07"),
    "olmo3": ((0, 13, 4), "2025-12-15"),
    "glm4moelite": ((0, 14, 3), "2026-01-21"),
    "lfm2": ((0, 14, 3), "2026-01-21"),
    "qwen3next": ((0, 15, 5), "2026-02-05"),
    "qwen35": ((0, 17, 1), "2026-02-25"),
    "qwen35moe": ((0, 17, 1), "2026-02-25"),
    "lfm2moe": ((0, 17, 1), "2026-02-25"),
    "nemotron_h": ((0, 17, 1), "2026-02-25"),
    "nemotron_h_moe": ((0, 17, 1), "2026-02-25"),
    "gemma4": ((0, 20, 4), "2026-04-07"),
}
AUTO_FLASH_ATTENTION_SINCE = ((0, 13, 4), "2025-12-15")  # llama.cpp runner passes `auto` (commit bd6c1d6b4)
# every GGUF model on upstream llama-server, the Go engine gone (PR #16031, first in v0.30.0; module docstring)
LLAMA_SERVER_ONLY_SINCE = ((0, 30, 0), "2026-06-01")


def _version(text: str) -> tuple[int, int, int] | None:
    found = re.search(r"\b(\d+)\.(\d+)(?:\.(\d+))?\b", text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


def ollama_runner(engine: str | None, model_type: str | None, version: str, measured_date: str) -> str | None:
    """`ollama-engine` when an Ollama row's model architecture ran on Ollama's own engine (a release from the one
    that listed it up to 0.30.0, which dropped the Go engine for GGUF), else `engine`."""
    if engine != OLLAMA or not model_type or model_type not in OLLAMA_ENGINE_SINCE:
        return engine
    _, since, since_date = OLLAMA_ENGINE_SINCE[model_type]
    stated = _version(version)
    dated = measured_date[:10] if re.match(r"\d{4}-\d{2}", measured_date) else ""

    def released(release: tuple[tuple[int, int, int], str]) -> bool:  # the version, else the date (a month will do)
        return stated >= release[0] if stated is not None else bool(dated) and dated >= release[1]

    if released(LLAMA_SERVER_ONLY_SINCE):
        return engine  # 0.30.0 on: llama-server for every GGUF model
    return OLLAMA_ENGINE if released((since, since_date)) else engine


def _model_type(preset: Any | None) -> str | None:
    """The HF model_type of a row's catalog preset, or None."""
    return preset.config.get("model_type") if preset is not None else None


def runner_for_case(case: Any, engine: str | None, preset: Any | None) -> str | None:
    """The engine a row ran on, once its model preset is known (`validation.estimate_kwargs`)."""
    return ollama_runner(engine, _model_type(preset), case.text("engine_version"), case.text("measured_date"))


def _at_least(version: tuple[int, int, int] | None, date: str, since: tuple[tuple[int, int, int], str]) -> bool | None:
    """Whether a row of this version (else measurement date) runs a release at or after `since`; None if neither."""
    if version is not None:
        return version >= since[0]
    if re.match(r"\d{4}-\d{2}-\d{2}", date):
        return date[:10] >= since[1]
    return None


def ollama_flash_attention(engine: str | None, model_type: str | None, version: str, measured_date: str) -> bool | None:
    """Whether an Ollama row ran flash attention with OLLAMA_FLASH_ATTENTION unset; None when the row is not
    Ollama's or its release cannot be told (module docstring for the sources)."""
    if engine not in (OLLAMA, OLLAMA_ENGINE):
        return None
    stated = _version(version)
    runner = ollama_runner(OLLAMA, model_type, version, measured_date)
    if runner == OLLAMA and _at_least(stated, measured_date, AUTO_FLASH_ATTENTION_SINCE):
        return True
    arch = GGUF_ARCH.get(model_type or "")
    if arch in FLASH_ATTENTION_SINCE:
        return _at_least(stated, measured_date, FLASH_ATTENTION_SINCE[arch])
    known = stated is not None or re.match(r"\d{4}-\d{2}-\d{2}", measured_date) is not None
    return False if known else None  # never listed: off at every release


def flash_attention_for_case(case: Any, engine: str | None, preset: Any | None) -> bool | None:
    """`ollama_flash_attention` for a measured row, once its engine id and model preset are known."""
    return ollama_flash_attention(engine, _model_type(preset), case.text("engine_version"), case.text("measured_date"))
