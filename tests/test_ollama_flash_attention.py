"""Ollama's flash-attention default per release and model (fitting/ollama_engine.ollama_flash_attention).

Read from ollama/ollama: fs/ggml/ggml.go `FlashAttention()` at each tag, llm/server.go `NewLlamaServer`
(auto mode for the llama.cpp runner from 0.13.4). A row run without it pays the unfused decode-attention
term (`validation.unfused_decode_attention`).
"""

from __future__ import annotations

import pytest

from tokometer.fitting.ollama_engine import OLLAMA, OLLAMA_ENGINE, ollama_flash_attention
from tokometer.fitting.rows import read_cases
from tokometer.fitting.validation import unfused_decode_attention


@pytest.mark.parametrize(
    ("model_type", "version", "date", "expected"),
    [
        ("gemma4", "0.20.0", "", False),  # Go engine, gemma4 not listed until 0.20.4
        ("gemma4", "0.20.4", "", True),
        ("gemma4_text", "0.23.1", "", True),
        ("qwen3_5_moe_text", "0.19.0", "", True),  # listed since 0.17.1
        ("qwen3", "0.12.3", "", False),  # Go engine from 0.12.0, listed from 0.12.4
        ("qwen3", "0.12.4", "", True),
        ("llama", "0.12.0", "", False),  # llama.cpp runner before auto mode: off
        ("llama", "0.13.4", "", True),  # llama.cpp runner, auto mode
        ("llama", "", "2025-09-15", False),  # no version: the release of its date
        ("llama", "", "2026-01-10", True),
        ("gpt_oss", "0.11.7", "", False),  # before the list existed
        ("gpt_oss", "0.11.8", "", True),
    ],
)
def test_ollama_default_per_release_and_model(model_type: str, version: str, date: str, expected: bool) -> None:
    assert ollama_flash_attention(OLLAMA, model_type, version, date) is expected


def test_not_ollama_or_unknown_release_says_nothing() -> None:
    assert ollama_flash_attention("llama-cpp", "llama", "0.12.0", "") is None
    assert ollama_flash_attention(OLLAMA, "llama", "", "") is None
    assert ollama_flash_attention(OLLAMA_ENGINE, None, "", "not stated") is None


def test_rows_read_unfused_by_ollamas_release(tmp_path) -> None:  # type: ignore[no-untyped-def]
    header = (
        "row_id,source_id,source_ref,engine,engine_version,backend,hardware_id,n_devices,model,quant,"
        "batch_size,prompt_tokens,gen_tokens,metric,unit,value,measured_date,flag,notes\n"
    )
    lines = [
        "r1,S,ref,Ollama,0.20.0,metal,m3-max-40c-64gb,1,gemma-4-26b-a4b,Q4_K_M,1,1000,128,tg,tok/s,50,2026-04-03,,",
        "r2,S,ref,Ollama,0.20.4,metal,m3-max-40c-64gb,1,gemma-4-26b-a4b,Q4_K_M,1,1000,128,tg,tok/s,50,2026-04-08,,",
        "r3,S,ref,Ollama,0.20.0,metal,m3-max-40c-64gb,1,gemma-4-26b-a4b,Q4_K_M,1,1000,128,tg,tok/s,50,2026-04-03,,OLLAMA_FLASH_ATTENTION=1 (flash attention on)",
        "r4,S,ref,llama.cpp,b7000,metal,m3-max-40c-64gb,1,gemma-4-26b-a4b,Q4_K_M,1,1000,128,tg,tok/s,50,2026-04-03,,",
    ]
    path = tmp_path / "rows.csv"
    path.write_text(header + "\n".join(lines) + "\n")
    unfused = {c.text("row_id"): unfused_decode_attention(c) for c in read_cases(path)}
    assert unfused == {"r1": True, "r2": False, "r3": False, "r4": False}
