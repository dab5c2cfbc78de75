"""Engines know their formats: impossible engine x format pairs are input errors with the nearest
choices, defaults stay valid, and the quant advice stays within what the engine runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_helpers import write_gguf
from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.cli import main
from tokometer.errors import InputError
from tokometer.report.json import estimate_warnings
from tokometer.usecases.estimate import estimate
from tokometer.usecases.formats import (
    GGUF,
    check_format,
    engine_support,
    engines_running,
    nearest_formats,
    substitute_format,
)
from tokometer.usecases.policy import (
    ADVICE_LADDER,
    DEFAULT_QUANT,
    QUANT_LADDER,
    default_engine,
    quant_runs,
)


@pytest.mark.parametrize("engine", list(engine_catalog()), ids=lambda e: e.id)
def test_every_engine_lists_known_formats_with_a_source(engine) -> None:
    assert engine.weight_formats and engine.formats_source
    for token in (*engine.weight_formats, *engine.experimental_formats):
        assert token == GGUF or token in quant_catalog().ids, f"{engine.id}: unknown format {token!r}"
    assert not set(engine.weight_formats) & set(engine.experimental_formats)
    # every engine runs some 16-bit float checkpoint, so a bf16 model always has a way in
    assert any(engine_support(engine, quant_catalog().get(q)) == "yes" for q in ("bf16", "fp16"))


def test_ladders_name_catalog_formats() -> None:
    for quant_id in (*QUANT_LADDER, *ADVICE_LADDER):
        assert quant_id in quant_catalog().ids
    # the advice ladder keeps QUANT_LADDER's order for the steps they share
    shared = [q for q in ADVICE_LADDER if q in QUANT_LADDER]
    assert shared == list(QUANT_LADDER)


@pytest.mark.parametrize(
    ("engine", "quant", "support"),
    [
        ("llama-cpp", "q4-k-m", "yes"),
        ("llama-cpp", "mxfp4", "yes"),
        ("llama-cpp", "bf16", "yes"),
        ("llama-cpp", "awq-int4", "no"),
        ("llama-cpp", "fp8", "no"),
        ("ollama", "q8-0", "yes"),
        ("ollama", "gptq-int4", "no"),
        ("vllm", "awq-int4", "yes"),
        ("vllm", "bnb-nf4", "yes"),
        ("vllm", "q4-k-m", "experimental"),
        ("tensorrt-llm", "q4-k-m", "no"),
        ("tensorrt-llm", "nvfp4-modelopt", "yes"),
        ("tensorrt-llm", "nvfp4", "no"),  # ggml's NVFP4 blocks; `-q nvfp4` maps to the checkpoint layout
        ("vllm", "mxfp4-experts", "yes"),
        ("mlx", "mlx-4bit", "yes"),
        ("mlx", "q4-k-m", "no"),
        ("exllamav2", "exl2-4bpw", "yes"),
        ("exllamav2", "awq-int4", "no"),
    ],
)
def test_engine_support(engine: str, quant: str, support: str) -> None:
    assert engine_support(engine_catalog().get(engine), quant_catalog().get(quant)) == support


def test_numbers_run_on_any_engine() -> None:
    trt = engine_catalog().get("tensorrt-llm")
    e = estimate("llama-3.1-8b", "h100-sxm", engine="tensorrt-llm", bits=4.5)
    assert e.engine is trt and e.quant is not None and e.quant.kind == "user-bits"
    assert estimate("llama-3.1-8b", "h100-sxm", engine="tensorrt-llm", weights_gb=5.0).engine is trt


def test_tensorrt_llm_with_a_gguf_quant_is_an_error_naming_the_choices() -> None:
    with pytest.raises(InputError) as info:
        estimate("llama-3.1-8b", "h100-sxm", engine="tensorrt-llm", quant="q4_k_m")
    err = info.value
    assert err.field == "quant"
    text = str(err)
    assert "Q4_K_M" in text and "TensorRT-LLM" in text
    nearest = [q.id for q in nearest_formats(engine_catalog().get("tensorrt-llm"), quant_catalog().get("q4-k-m"))]
    assert "awq-int4" in nearest and all(q in text for q in nearest)
    assert "llama-cpp" in text  # where Q4_K_M does run


def test_only_a_gguf_only_format_is_called_one() -> None:
    with pytest.raises(InputError) as info:
        estimate("llama-3.1-8b", "h100-sxm", engine="mlc-llm", quant="bf16")
    assert "BF16" in str(info.value) and "GGUF" not in str(info.value)  # bf16 is a ggml type, and more


def test_nearest_formats_are_nearest_in_bits() -> None:
    trt = engine_catalog().get("tensorrt-llm")
    q4 = quant_catalog().get("q4-k-m")
    nearest = nearest_formats(trt, q4, n=100)
    gaps = [abs(q.bits_per_weight - q4.bits_per_weight) for q in nearest]
    assert gaps == sorted(gaps)
    assert all(engine_support(trt, q) == "yes" for q in nearest)


def test_engines_running_a_format_are_the_ones_that_list_it() -> None:
    listed, experimental = engines_running(quant_catalog().get("q4-k-m"))
    assert {"llama-cpp", "ollama", "lm-studio"} <= {e.id for e in listed}
    assert "tensorrt-llm" not in {e.id for e in listed + experimental}
    assert "vllm" in {e.id for e in experimental}


def test_cli_refuses_an_impossible_pair_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["estimate", "llama-3.1-8b", "-e", "tensorrt-llm", "-q", "q4_k_m"])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --quant Q4_K_M") and "Traceback" not in err


def test_an_experimental_pair_is_accepted_with_a_warning() -> None:
    e = estimate("llama-3.1-8b", "h100-sxm", engine="vllm", quant="q4_k_m")
    assert e.engine.id == "vllm" and any("experimentally" in w for w in estimate_warnings(e))
    plain = estimate("llama-3.1-8b", "h100-sxm", engine="vllm", quant="awq")
    assert not any("experimentally" in w for w in estimate_warnings(plain))


def test_a_draft_quant_the_engine_cannot_run_is_an_error() -> None:
    with pytest.raises(InputError) as info:
        estimate("llama-3.1-8b", "rtx-4090", engine="llama.cpp", draft="llama-3.2-1b", draft_quant="fp8")
    assert info.value.field == "draft_quant"


def test_a_published_dtype_the_engine_cannot_run_becomes_its_nearest_format() -> None:
    # DeepSeek-V3 is published in FP8; MLX has no FP8 weights, so it runs the nearest MLX format
    e = estimate("deepseek-v3", "m3-ultra-80c", engine="mlx")
    assert e.engine.id == "mlx" and e.quant is not None and e.quant.id == "mlx-8bit"
    assert any("MLX 8-bit" in w and "--quant" in w for w in estimate_warnings(e))
    # the one default precision rule (policy.DEFAULT_PRECISION_RULE): llama.cpp on a Mac gets Q4_K_M,
    # TensorRT-LLM the model's published dtype; neither needs a substitute
    assert estimate("deepseek-v3", "m3-ultra-80c").quant.id == "q4-k-m"  # type: ignore[union-attr]
    trt = estimate(engine="tensorrt-llm", hw="h100-sxm")
    assert trt.quant is not None and trt.quant.id == "bf16"
    assert not any("assumed (pass --quant" in w for w in estimate_warnings(trt))


@pytest.mark.parametrize("hardware", list(hardware_catalog()), ids=lambda h: h.id)
def test_defaults_are_valid_on_every_device(hardware) -> None:
    """The default engine runs the default quant, and every published dtype of a preset has a way in."""
    default = quant_catalog().get(DEFAULT_QUANT)
    assert engine_support(default_engine(hardware, default), default) == "yes"
    for quant_id in sorted({p.default_quant or "bf16" for p in model_catalog()}):
        quant = quant_catalog().get(quant_id)
        engine = default_engine(hardware, quant)
        ran = quant if engine_support(engine, quant) == "yes" else substitute_format(engine, quant, ADVICE_LADDER)
        assert ran is not None and engine_support(engine, ran) == "yes", (hardware.id, quant_id, engine.id)


def test_bare_estimate_on_every_device_runs() -> None:
    for hardware in hardware_catalog():
        e = estimate(hw=hardware.id)
        assert e.quant is not None and engine_support(e.engine, e.quant) == "yes", hardware.id


@pytest.mark.parametrize("preset", list(model_catalog()), ids=lambda p: p.id)
def test_every_preset_runs_with_its_defaults(preset) -> None:
    for hw in ("rtx-4090", "h100-sxm", "m2-ultra-76c"):
        e = estimate(preset.id, hw)
        assert e.quant is None or engine_support(e.engine, e.quant) == "yes"


def test_default_engine_picks_one_that_runs_the_format() -> None:
    rtx = hardware_catalog().get("rtx-4090")
    for quant_id in ("awq-int4", "fp8", "exl2-4bpw", "q4-k-m"):
        quant = quant_catalog().get(quant_id)
        engine = default_engine(rtx, quant)
        assert quant_runs(quant, rtx, engine), (quant_id, engine.id)
    assert default_engine(rtx, quant_catalog().get("q4-k-m")).id == "llama-cpp"


def test_advice_stays_within_the_engine_formats() -> None:
    """A 70B in bf16 does not fit an H100: vLLM is advised a format it runs, llama.cpp a GGUF one."""
    for engine in ("vllm", "tensorrt-llm", "llama.cpp"):
        e = estimate("llama-3.1-70b", "h100-sxm", engine=engine, quant="bf16")
        # a smaller quant that fits is a remedy of the not-fit headline; the advice no longer repeats it
        smaller = next((r for r in e.remedies if r.kind == "quant"), None)
        if e.advice is not None and e.advice.kind == "drop-quant":
            name = e.advice.quant_name
        else:
            assert smaller is not None, engine
            name = smaller.quant_name
        assert name
        advised = next(q for q in quant_catalog() if q.name == name)
        assert engine_support(e.engine, advised) == "yes", (engine, advised.id)
        assert advised.is_gguf == (e.engine.id == "llama-cpp")


def test_check_format_passes_what_runs() -> None:
    check_format(engine_catalog().get("mlx"), quant_catalog().get("mlx-4bit"))
    check_format(engine_catalog().get("vllm"), quant_catalog().get("q4-k-m"))  # experimental: allowed


def test_a_gguf_file_needs_an_engine_that_loads_gguf(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_gguf(path)
    assert estimate(str(path), "rtx-4090").engine.id == "llama-cpp"
    with pytest.raises(InputError) as info:
        estimate(str(path), "h100-sxm", engine="tensorrt-llm")
    assert info.value.field == "engine" and "llama-cpp" in str(info.value)
    experimental = estimate(str(path), "h100-sxm", engine="vllm")
    assert any("experimentally" in w for w in estimate_warnings(experimental))


def test_a_sweep_with_an_engine_keeps_to_its_formats() -> None:
    from tokometer.usecases.sweep import sweep

    with pytest.raises(InputError) as info:
        sweep(["llama-3.1-8b"], ["h100-sxm"], ["q4_k_m"], engine="tensorrt-llm")
    assert info.value.field == "quant"
    everything = sweep(["llama-3.1-8b"], ["h100-sxm"], ["all"], engine="tensorrt-llm")
    trt = engine_catalog().get("tensorrt-llm")
    assert [q.id for q in everything.quants] == [q for q in QUANT_LADDER if engine_support(trt, quant_catalog().get(q)) == "yes"]
    assert "q4-k-m" not in [q.id for q in everything.quants] and "bf16" in [q.id for q in everything.quants]
    default = sweep(["llama-3.1-8b"], ["h100-sxm"], engine="tensorrt-llm")
    assert [q.id for q in default.quants] == ["awq-int4"]  # the default Q4_K_M, as TensorRT-LLM runs it


def test_nvfp4_under_vllm_is_the_modelopt_checkpoint_and_gemma_4_12b_weighs_what_vllm_loads() -> None:
    """Seed 004: vLLM loads the nvfp4-pack-quantized Gemma 4 12B in 7.6 GiB (vLLM prints GiB). The
    ModelOpt/compressed-tensors layout quantizes the Linear layers at 4.5 bits (16 E2M1 + one E4M3
    scale) and leaves the 262144 x 3840 embedding (tied head) in BF16: 10.90 B x 4.5 bits + 1.01 B x 16 bits."""
    from tokometer.usecases.estimate import estimate

    est = estimate("gemma-4-12b", "rtx-5060-ti", quant="nvfp4", engine="vllm", advise=False)
    assert "ggml" not in est.quant.name and est.quant.id == "nvfp4-modelopt"
    assert est.weights.total / 2**30 == pytest.approx(7.6, abs=0.05)
    spec = est.model
    embedding_bf16 = spec.params.embedding * 2.0
    assert est.weights.embedding == pytest.approx(embedding_bf16)
    rest = spec.params.total - spec.params.embedding - spec.params.lm_head
    assert est.weights.total - embedding_bf16 == pytest.approx(rest * 4.5 / 8, rel=1e-9)
    # llama.cpp keeps ggml's own NVFP4 type
    assert estimate("gemma-4-12b", "rtx-5060-ti", quant="nvfp4", engine="llama.cpp", advise=False).quant.id == "nvfp4"


def test_gpt_oss_mxfp4_under_vllm_keeps_attention_and_routers_in_bf16() -> None:
    from tokometer.usecases.estimate import estimate

    est = estimate("gpt-oss-20b", "h100-sxm", engine="vllm", advise=False)
    spec = est.model
    assert est.quant.id == "mxfp4-experts"
    assert est.weights.dense == pytest.approx(spec.params.dense * 2.0)
    assert est.weights.routed_experts == pytest.approx(spec.params.routed_experts * 4.25 / 8)
    # the published checkpoint is 13.76 GB of safetensors; ggml's all-MXFP4 reading was 12.8
    assert est.weights.total / 1e9 == pytest.approx(13.75, abs=0.1)


def test_fp8_block_scales_and_an_fp4_kv_cache() -> None:
    from tokometer.usecases.estimate import estimate

    block = quant_catalog().get("fp8-128x128")
    assert block.id == "fp8-block" and block.bits_per_weight == pytest.approx(8 + 32 / (128 * 128), abs=1e-3)
    assert engine_support(engine_catalog().get("sglang"), block) == "yes"
    fp16 = estimate("llama-3.1-8b", "b200", engine="vllm", advise=False)
    fp4 = estimate("llama-3.1-8b", "b200", engine="vllm", kv_dtype="nvfp4-kv", advise=False)
    assert fp4.kv_dtype.bytes_per_weight == pytest.approx(fp16.kv_dtype.bytes_per_weight * 4.5 / 16)
    with pytest.raises(InputError):  # a KV-only format is not a weight format
        estimate("llama-3.1-8b", "b200", engine="vllm", quant="nvfp4-kv", advise=False)
