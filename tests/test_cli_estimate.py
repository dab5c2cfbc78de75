"""`tokometer estimate` and the catalog commands as a user runs them: output, JSON keys, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers import run_cli

REQUIRED_KEYS = [
    "model.name", "model.total_params", "model.weight_bytes",
    "decode.ceiling_tok_s", "decode.estimate_tok_s", "decode.bytes_per_token",
    "decode.weight_bytes_per_token", "decode.kv_bytes_per_token", "kv_cache.bytes_per_token",
    "prefill.ttft_s", "prefill.tok_s", "memory.total_gb", "memory.fits", "memory.max_context_tokens",
]


def dig(data: dict, dotted: str):
    for part in dotted.split("."):
        data = data[part]
    return data


def test_default_estimate_is_readable() -> None:
    r = run_cli("estimate")
    assert r.code == 0, r.err
    assert "ceiling" in r.out and "estimate" in r.out and "tok/s" in r.out
    assert "RTX 4090" in r.out and "Llama 3.1 8B" in r.out
    assert "why: decode is memory-bound" in r.out


def test_json_has_the_stable_keys() -> None:
    r = run_cli("estimate", "llama-3.1-8b", "--hw", "h100-sxm", "-q", "fp8", "--context", "8192", "--json")
    assert r.code == 0, r.err
    data = r.json()
    for key in REQUIRED_KEYS:
        assert dig(data, key) is not None, key
    assert data["decode"]["ceiling_tok_s"] >= data["decode"]["estimate_tok_s"]
    # KV read at 8k context: 32 layers x 8 KV heads x 128 x 2 (K,V) x 2 bytes x 8192
    assert data["decode"]["kv_bytes_per_token"] == pytest.approx(32 * 8 * 128 * 2 * 2 * 8192)
    assert data["kv_cache"]["bytes_per_token"] == pytest.approx(32 * 8 * 128 * 2 * 2)


def test_seed_calculator_with_bare_numbers() -> None:
    r = run_cli("estimate", "--params", "70", "--bits", "16", "--bandwidth", "3350", "--json")
    assert r.code == 0, r.err
    assert r.json()["decode"]["ceiling_tok_s"] == pytest.approx(23.93, rel=0.01)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["estimate", "no-such-model"], "unknown model 'no-such-model'"),
        (["estimate", "llama-3.1-8b", "--hw", "rtx-9999"], "unknown hardware 'rtx-9999'"),
        (["estimate", "llama-3.1-8b", "--hw", "rtx-4009"], "did you mean"),
        (["estimate", "--params", "-7", "--bandwidth", "100"], "--params must be a positive number"),
        (["estimate", "--params", "7", "--bandwidth", "0"], "--bandwidth must be a positive number"),
        (["estimate", "llama-3.1-8b", "--batch", "0"], "--batch must be a positive number"),
        (["estimate", "llama-3.1-8b", "-q", "q9_z"], "unknown quantization"),
        (["estimate", "llama-3.1-8b", "--kv-dtype", "q4_k_m"], "not a KV-cache format"),
        (["hardware", "show", "nope"], "unknown hardware"),
    ],
)
def test_bad_input_is_one_clear_line(args: list[str], message: str) -> None:
    r = run_cli(*args)
    assert r.code == 2
    assert "Traceback" not in r.err
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_broken_user_catalog_is_one_clear_line(isolated_home: Path) -> None:
    (isolated_home / "hardware.toml").write_text("[broken\n", encoding="utf-8")
    r = run_cli("estimate", env={"TOKOMETER_HOME": str(isolated_home)})
    assert r.code == 2
    assert "hardware.toml" in r.err and "not valid TOML" in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("group", ["hardware", "models", "quants", "engines"])
def test_catalog_lists_have_json(group: str) -> None:
    r = run_cli(group, "list", "--json")
    assert r.code == 0, r.err
    assert len(r.json()) >= 10


def test_hardware_show_gives_the_source() -> None:
    r = run_cli("hardware", "show", "4090", "--json")
    assert r.code == 0
    data = r.json()
    assert data["id"] == "rtx-4090" and data["memory_bandwidth_gb_per_s"] == 1008
    assert data["source"].startswith("http")


def test_models_show_accounts_a_preset() -> None:
    r = run_cli("models", "show", "qwen3-30b-a3b", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert data["total_params"] / 1e9 == pytest.approx(30.5, rel=0.01)
    assert data["params_read_per_token"] / 1e9 == pytest.approx(3.0, rel=0.03)


def test_does_not_fit_is_said() -> None:
    r = run_cli("estimate", "llama-3.1-70b", "--hw", "rtx-4090", "-q", "fp16", "--json")
    assert r.code == 0
    data = r.json()
    assert data["memory"]["fits"] is False
    assert any("does not fit" in w for w in data["warnings"])


def test_hw_local_without_a_profile_says_to_probe_first() -> None:
    """Issue #14, item 11: as bench says, not "unknown hardware"."""
    r = run_cli("estimate", "--hw", "local")
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        "error: no `local` hardware profile yet: run `tokometer probe` first (it measures this machine)"
    ]


def test_a_context_past_the_model_limit_gets_a_note() -> None:
    """Issue #14, item 11: a 10M-token context on a 128k model says it is past the model's limit."""
    r = run_cli("estimate", "llama-3.1-8b", "--context", "10000000", "--json")
    assert r.code == 0, r.err
    notes = [w for w in r.json()["warnings"] if "past Llama 3.1 8B's limit of 131,072 tokens" in w]
    assert len(notes) == 1 and notes[0].startswith("10,000,000 tokens")
    within = run_cli("estimate", "llama-3.1-8b", "--context", "100000", "--json").json()["warnings"]
    assert not any("limit of" in w for w in within)
