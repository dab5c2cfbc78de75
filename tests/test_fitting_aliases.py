"""Published names resolve to catalog entries (fitting/aliases.py, published/RESOLVE.toml), and only when sure.

The as-stated strings below are copied from real rows of calibration_data/published/*.csv; a name that
would resolve to the wrong model (a bare family word, a pruned checkpoint, a parameter count that
disagrees) must stay unresolved: a wrong match is worse than an unscored row.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.fitting import aliases, rows, validation


@pytest.mark.parametrize(
    ("as_stated", "source", "expected"),
    [
        ("mlx-community/Qwen3-32B-4bit", "ASLB-M3MAX", "qwen3-32b"),
        ("~/.cache/llmfit/models/gemma-4-31B-it-UD-Q4_K_XL.gguf", "ASLB-M3MAX", "gemma-4-31b"),
        ("Gemma4-26B-A4B 4bit mlx-lm", "ASLB-M3MAX", "gemma-4-26b-a4b"),
        ("qwen3.5:35b-a3b-q4_K_M", "ASLB-M3MAX", "qwen3.5-35b-a3b"),
        ("mlx-community/Qwen3-Coder-Next-4bit", "ASLB-M3MAX", "qwen3-next-80b-a3b"),
        ("llama 7B Q4_0", "NEOZ-SYCLCI", "llama-2-7b"),
        ("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", "MLXCEL-M5MAX", "llama-3.1-8b"),
        ("mlx-community/Qwen3-4B-Instruct-2507-6bit", "MLXCEL-GB10", "qwen3-4b"),
        ("Qwen3.6-27B-FP8", "LOTTO-3090", "qwen3.6-27b"),
        ("qwen35 27B Q3_K - Medium", "RYANILANO-16GB", "qwen3.6-27b"),
    ],
)
def test_published_model_names_resolve(as_stated: str, source: str, expected: str) -> None:
    found = aliases.resolve_model(as_stated, source)
    assert found is not None, as_stated
    assert found[0].id == expected
    assert found[1]  # every resolution says why


def test_the_qwen36_27b_preset_counts_llama_benchs_printed_parameters() -> None:
    from tokometer.catalog import model_catalog

    # RYANILANO-16GB prints model_n_params 26895998464 for the qwen35 27B GGUF
    assert model_catalog().get("qwen3.6-27b").spec.total_params == pytest.approx(26895998464, rel=1e-6)


def test_llama_bench_type_strings_resolve_only_when_the_parameter_count_agrees() -> None:
    found = aliases.resolve_model("qwen3moe 30B.A3B Q4_K - Medium", "DANDIN-SPARK", 30.53)
    assert found is not None and found[0].id == "qwen3-30b-a3b"
    assert aliases.resolve_model("qwen3moe 30B.A3B Q4_K - Medium", "DANDIN-SPARK", 21.0) is None


def test_a_gguf_of_a_multimodal_model_resolves_by_its_language_models_count() -> None:
    # llama-bench prints Gemma 3 4B's GGUF as "3.88 B" (the language model; the SigLIP tower is in the mmproj
    # file) where the checkpoint holds 4.3 B: both counts name the preset, and a count near neither does not
    from tokometer.catalog import model_catalog

    preset = model_catalog().get("gemma-3-4b")
    assert abs(preset.params_b - 3.88) > aliases.PARAMS_TOLERANCE * 3.88  # the checkpoint count alone misses
    for count in (3.88, 4.3):
        found = aliases.resolve_model("gemma3 4B Q3_K - Small", "R9700-TOOLBOX", count)
        assert found is not None and found[0].id == "gemma-3-4b"
    assert aliases.resolve_model("gemma3 4B Q3_K - Small", "R9700-TOOLBOX", 3.5) is None


@pytest.mark.parametrize(
    ("as_stated", "count", "expected"),
    [
        ("llama 8B Q4_K - Medium", 8.03, "llama-3.1-8b"),  # Llama 3 8B has the same shape, a shorter context
        ("llama 70B Q4_K - Medium", 70.55, "llama-3.1-70b"),  # not Llama 2 70B (68.98 B, a 32k vocabulary)
        ("llama 3B Q4_K - Medium", 3.21, "llama-3.2-3b"),
        ("qwen2 14B Q4_K - Medium", 14.77, "qwen2.5-14b"),
        ("mistral3 14B Q4_K - Medium", 13.51, "ministral-3-14b"),
        ("llama 1B Q4_K - Medium", 1.1, "tinyllama-1.1b"),  # not Llama 3.2 1B (1.24 B)
        ("llama 1B Q4_K - Medium", 1.3, None),  # a count no Llama preset holds
        ("gemma3 270M Q8_0", None, "gemma-3-270m"),  # a size in millions
        ("gemma4 E4B Q4_K - Medium", 7.52, "gemma-4-e4b"),  # Gemma's effective size label
        ("qwen2 1.5B Q4_K - Medium", 1.78, None),  # the untied output's count: 16 % off Qwen2.5 1.5B
        ("llama 8B Q4_K - Medium", None, None),  # no count, no choice
    ],
)
def test_shared_llama_bench_architectures_resolve_by_their_exact_count(as_stated: str, count: float | None, expected: str | None) -> None:
    found = aliases.resolve_model(as_stated, "ANY-SOURCE", count)
    assert (found[0].id if found else None) == expected


def test_a_shared_architecture_with_two_shapes_at_one_count_resolves_to_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = aliases._shape
    monkeypatch.setattr(aliases, "_shape", lambda spec: (real(spec), spec.max_context_tokens))  # 3 8B and 3.1 8B differ
    assert aliases.shared_arch_candidates("llama 8B Q4_K - Medium", 8.03) == []
    assert aliases.shared_arch_candidates("llama 3B Q4_K - Medium", 3.21) == ["llama-3.2-3b"]


def test_a_resolved_gemma_row_reads_its_depth() -> None:
    # unresolved, a tg32 @ d32768 row was predicted as bare numbers with no KV cache: the same at 16k and 32k
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.validation import estimate_kwargs

    cases = {c.row_id: c for c in read_evidence() if c.row_id in ("R9700-TOOLBOX-0554", "R9700-TOOLBOX-0556")}
    assert len(cases) == 2
    for case in cases.values():
        assert estimate_kwargs(case)["model"].id == "gemma-3-4b"


@pytest.mark.parametrize(
    "as_stated",
    [
        "Mistral Nemo Instruct 2407",  # "Mistral" alone would be the catalog's Mistral 7B
        "Mistral Small 24B Instruct 2501",
        "Qwen3.6-35B-A3B reap50-q4 (REAP 50% expert-pruned checkpoint)",  # half the experts
        "DeepSeek R1 Distill Llama 8B",
        "phi3 3B Q8_0",  # Phi-3-mini, Phi-3.5-mini and Phi-4-mini all print it
    ],
)
def test_names_that_must_not_match(as_stated: str) -> None:
    assert aliases.resolve_model(as_stated) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q4_K - Medium", "q4-k-m"),
        ("Q3_K - Large", "q3-k-l"),
        ("Q4_K - Small", "q4-k-s"),
        ("Q2_K - Medium", "q2-k"),
        ("IQ4_XS - 4.25 bpw", "iq4-xs"),
        ("GGUF-Q6_K", "q6-k"),
        ("MXFP4 mxfp4", "mxfp4"),
        ("6bit MLX", "bits:6.5"),
        ("MLX q5 g32", "bits:6"),
        ("Qwen3.6-27B-exl3-6.0bpw", "bits:6"),
    ],
)
def test_printed_quantizations_resolve(text: str, expected: str) -> None:
    found = aliases.quant_from_text(text)
    assert found is not None and found.target == expected


@pytest.mark.parametrize("text", ["NVFP4 nvfp4", "INT4 int4", "UD-Q4_K_XL", "Ollama default tag (not stated)"])
def test_quantizations_stored_differently_per_engine_stay_unresolved(text: str) -> None:
    assert aliases.quant_from_text(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("MLX (Metal)", "metal"), ("Vulkan (RADV)", "vulkan"), ("ROCm 7.2 (HIP)", "rocm"), ("CUDA (MLX CUDA backend)", "cuda")],
)
def test_printed_backends_resolve(text: str, expected: str) -> None:
    found = aliases.backend_from_text(text)
    assert found is not None and found.target == expected
    assert aliases.backend_from_text("HTP (Hexagon)") is None


def _rows(name: str) -> list[validation.Case]:
    return rows.read_cases(PUBLISHED_DIR / name)


@pytest.mark.skipif(not (PUBLISHED_DIR / "MLXCEL-GB10.csv").is_file(), reason="published evidence not shipped")
def test_a_published_gb10_row_is_predicted_on_the_dgx_spark_with_its_engine_family() -> None:
    case = next(c for c in _rows("MLXCEL-GB10.csv") if c.metric == "tg" and validation.predict_case(c).scored)
    result = validation.predict_case(case)
    assert result.hardware_id == "dgx-spark"
    assert result.group is not None and result.group.startswith("mlx/")  # mlxcel borrows MLX's fit


def test_resolve_table_entries_name_catalog_entries() -> None:
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog

    catalogs = {"model": model_catalog(), "hardware": hardware_catalog(), "engine": engine_catalog(), "quant": quant_catalog()}
    table = aliases.resolve_table()
    assert table.entries
    for (kind, _source, _key), resolution in table.entries.items():
        if kind == "quant" and resolution.target.startswith("bits:"):  # a file's measured bits per weight
            assert 1.0 < float(resolution.target[5:]) < 33.0, resolution.target
        elif kind in catalogs:
            assert catalogs[kind].find(resolution.target) is not None, resolution.target
        assert resolution.reason


def test_a_broken_resolve_table_names_the_entry(tmp_path: Path) -> None:
    from tokometer.errors import CatalogError

    path = tmp_path / "RESOLVE.toml"
    path.write_text('[[model]]\nas_stated = "x"\nid = "llama-2-7b"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=r"\[\[model\]\] #1: missing reason"):
        aliases.resolve_table.__wrapped__(path)


def test_the_transcribed_files_are_not_rewritten_by_resolution() -> None:
    # resolution happens when rows are read: the CSV cells stay as printed
    with (PUBLISHED_DIR / "NEOZ-SYCLCI.csv").open(encoding="utf-8", newline="") as fh:
        models = {row["model"] for row in csv.DictReader(fh)}
    assert "llama 7B Q4_0" in models


@pytest.mark.skipif(not (PUBLISHED_DIR / "LOCALSCORE.csv").is_file(), reason="published evidence not shipped")
def test_rows_validate_cannot_score_never_enter_the_fit() -> None:
    from tokometer.fitting.features import features

    localscore = [c for c in _rows("LOCALSCORE.csv")[:30] if c.metric in ("tg", "pp")]
    assert localscore and all(features(c) is None for c in localscore)
    no_prompt = [c for c in _rows("ANDYG-GB10.csv") if c.metric == "pp" and not c.number("prompt_tokens")]
    assert no_prompt and all(features(c) is None for c in no_prompt)
    assert all("prompt length is not stated" in (validation.predict_case(c).reason or "") for c in no_prompt)
    decode = [c for c in _rows("ANDYG-GB10.csv") if c.metric == "tg"]
    assert any(features(c) is not None for c in decode)  # the same source's decode rows are fitted


@pytest.mark.parametrize(
    ("as_stated", "expected"),
    [("Qwen3.6-27B-autoround-int4", "qwen3.6-27b"), ("Qwen3.6-27B-INT8-W8A8", "qwen3.6-27b"), ("gemma-4-12B-it-FP8-Dynamic", "gemma-4-12b")],
)
def test_quantizer_suffixes_are_stripped(as_stated: str, expected: str) -> None:
    found = aliases.resolve_model(as_stated, "LOTTO-3090")
    assert found is not None and found[0].id == expected


@pytest.mark.skipif(not (PUBLISHED_DIR / "R9700-TOOLBOX.csv").is_file(), reason="published evidence not shipped")
def test_the_r9700_toolbox_rows_are_predicted_on_the_radeon_ai_pro_r9700() -> None:
    cases = _rows("R9700-TOOLBOX.csv")
    stated = {c.text("hardware_as_stated") for c in cases}
    assert len(stated) == 2  # the named card and ROCm 7 nightly's generic "AMD Radeon Graphics, gfx1201"
    decode = [c for c in cases if c.metric == "tg"]
    for text in stated:
        case = next(c for c in decode if c.text("hardware_as_stated") == text)
        result = validation.predict_case(case)
        assert result.scored, result.reason
        assert result.hardware_id == "radeon-ai-pro-r9700"
        assert result.group == "llama-cpp/rocm/gddr-gpu"


def _with_heading(case: validation.Case, heading: str) -> validation.Case:
    from dataclasses import replace

    return replace(case, raw={**case.raw, "table_heading": heading})


@pytest.mark.skipif(not (PUBLISHED_DIR / "R9700-TOOLBOX.csv").is_file(), reason="published evidence not shipped")
def test_a_prefill_after_a_filled_context_is_not_read_as_a_prompt_into_an_empty_cache() -> None:
    from tokometer.fitting.features import features

    cases = [c for c in _rows("R9700-TOOLBOX.csv") if c.metric == "pp"]
    at_depth = [c for c in cases if "@ d" in c.text("table_heading")]
    empty = [c for c in cases if "@ d" not in c.text("table_heading")]
    assert at_depth and empty
    assert {validation.prefill_depth_tokens(c) for c in at_depth} == {16384, 32768}
    result = validation.predict_case(at_depth[0])
    assert not result.scored and "already in the KV cache" in (result.reason or "")
    assert features(at_depth[0]) is None  # nor fitted
    assert validation.predict_case(empty[0]).scored and features(empty[0]) is not None
    # the same row without the depth in its test name is a plain prompt again
    assert validation.prefill_depth_tokens(_with_heading(at_depth[0], "llama-bench table, test pp2048")) == 0
    assert validation.prefill_depth_tokens(_with_heading(at_depth[0], "test pp512 @ d4096")) == 4096
    # decode at depth keeps its depth in prompt_tokens and stays scored
    decode = next(c for c in _rows("R9700-TOOLBOX.csv") if c.metric == "tg" and "@ d" in c.text("table_heading"))
    assert validation.prefill_depth_tokens(decode) == 0 and validation.predict_case(decode).scored


@pytest.mark.skipif(not (PUBLISHED_DIR / "R9700-TOOLBOX.csv").is_file(), reason="published evidence not shipped")
@pytest.mark.parametrize(
    ("as_stated", "expected"),
    [("gpt-oss 20B MXFP4 MoE", "gpt-oss-20b"), ("nemotron_h_moe 31B.A3.5B Q4_K - Medium", "nemotron-3-nano-30b-a3b")],
)
def test_llama_bench_moe_type_strings_are_read_as_their_moe_models(as_stated: str, expected: str) -> None:
    found = aliases.resolve_model(as_stated, "R9700-TOOLBOX")
    assert found is not None and found[0].id == expected and found[0].spec.is_moe
    # read as a dense model of the printed size, their decode was far above its ceiling; now it is scored
    case = next(c for c in _rows("R9700-TOOLBOX.csv") if c.metric == "tg" and c.text("model") == as_stated)
    result = validation.predict_case(case)
    assert result.scored, result.reason


@pytest.mark.parametrize(
    ("as_stated", "params_b", "expected"),
    [
        ("gpt-oss 120B MXFP4 MoE", 116.83, "gpt-oss-120b"),
        ("gpt-oss ?B MXFP4 MoE", 116.83, "gpt-oss-120b"),
        ("gpt-oss ?B MXFP4 MoE", 20.91, "gpt-oss-20b"),
        ("qwen3next 80B.A3B Q4_K - Medium", None, "qwen3-next-80b-a3b"),
        ("gemma4 26B.A4B Q4_K - Medium", None, "gemma-4-26b-a4b"),
    ],
)
def test_llama_bench_type_strings_of_moe_families_resolve(as_stated: str, params_b: float | None, expected: str) -> None:
    found = aliases.resolve_model(as_stated, "*", params_b)
    assert found is not None and found[0].id == expected and found[0].spec.is_moe


def test_an_unsized_llama_bench_type_string_needs_the_parameter_count() -> None:
    # "?B": only the printed parameter count tells gpt-oss-20b from gpt-oss-120b
    assert aliases.resolve_model("gpt-oss ?B MXFP4 MoE", "*", None) is None
    assert aliases.resolve_model("gpt-oss ?B MXFP4 MoE", "*", 70.0) is None  # neither size agrees


@pytest.mark.skipif(not (PUBLISHED_DIR / "B70-COOKBOOK.csv").is_file(), reason="published evidence not shipped")
def test_b70_cookbook_short_prompt_avg_prefill_is_latency_and_unscored_but_longer_prompts_stay() -> None:
    grid = [c for c in _rows("B70-COOKBOOK.csv") if c.metric == "pp" and "avg_prefill_tps" in c.text("table_heading")]
    short = [validation.predict_case(c) for c in grid if c.prompt_tokens <= 64]
    longer = [validation.predict_case(c) for c in grid if c.prompt_tokens >= 500]
    assert len(short) == 12 and all(not r.scored and "latency" in (r.reason or "") for r in short)
    assert longer and all("latency" not in (r.reason or "") for r in longer)


def test_an_unscorable_rows_rule_needs_its_fields(tmp_path: Path) -> None:
    from tokometer.errors import CatalogError

    bad = tmp_path / "RESOLVE.toml"
    bad.write_text('[[unscorable_rows]]\nsource = "X"\nmetric = "pp"\nreason = "why"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="heading"):
        aliases.resolve_table(bad)
    bad.write_text('[[unscorable_rows]]\nsource = "X"\nmetric = "pp"\nheading = "h"\nmax_prompt_tokens = -1\nreason = "why"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="max_prompt_tokens"):
        aliases.resolve_table(bad)


@pytest.mark.skipif(not (PUBLISHED_DIR / "B70-COOKBOOK.csv").is_file(), reason="published evidence not shipped")
def test_b70_cookbook_q4_k_xl_rows_are_read_at_the_size_the_same_file_prints_elsewhere() -> None:
    """Qwen3.6-35B-A3B-UD-Q4_K_XL.gguf: 20.81 GiB for 34.66 B parameters in KYUZ0-B70's llama-bench log."""
    xl = [c for c in _rows("B70-COOKBOOK.csv") if c.text("quant") == "Q4_K_XL"]
    assert xl and all(c.text("model") == "Qwen3.6-35B-A3B" for c in xl)
    fmt, bits = aliases.quant_for(xl[0])
    assert fmt is None and bits == pytest.approx(20.81 * 2**30 * 8 / 34.66e9, rel=1e-3)
    decode = [validation.predict_case(c) for c in xl if c.metric == "tg"]
    assert len(decode) == 24 and all(r.scored for r in decode), [r.reason for r in decode if not r.scored][:2]
    # the other publications' quantizations named Q4_K_XL stay unread by this entry
    assert aliases.quant_from_text("Q4_K_XL", "KYUZ0-B70") is None


def _one_rule(tmp_path: Path, fields: str) -> aliases.RowRule:
    """The one `[[unscorable_rows]]` rule a RESOLVE.toml of these fields (and a reason) reads as."""
    table = tmp_path / "RESOLVE.toml"
    table.write_text(f'[[unscorable_rows]]\n{fields}\nreason = "why"\n', encoding="utf-8")
    (rule,) = aliases.resolve_table(table).row_rules
    return rule


@pytest.mark.parametrize(
    ("field", "match"),
    [
        ('metric = "tg"\nengine = 3', "engine"),
        ("metric = []", "no metric"),
        ('metric = ["pp", 2]', "metric"),
        ('metric = "pp"\ncontains = { quant = 3 }', "contains"),
    ],
)
def test_a_malformed_unscorable_rows_rule_is_a_catalog_error(tmp_path: Path, field: str, match: str) -> None:
    from tokometer.errors import CatalogError

    bad = tmp_path / "RESOLVE.toml"
    bad.write_text(f'[[unscorable_rows]]\nsource = "X"\n{field}\nheading = "h"\nreason = "why"\n', encoding="utf-8")
    with pytest.raises(CatalogError, match=match):
        aliases.resolve_table(bad)


@pytest.mark.skipif(not (PUBLISHED_DIR / "ASLB-M3MAX.csv").is_file(), reason="published evidence not shipped")
def test_an_unscorable_rows_rule_with_an_engine_matches_only_that_engines_rows(tmp_path: Path) -> None:
    rule = _one_rule(tmp_path, 'source = "ASLB-M3MAX"\nmetric = "tg"\nheading = "decode_tps"\nengine = "MLX (mlx-vlm)"')
    decode = [c for c in _rows("ASLB-M3MAX.csv") if c.metric == "tg"]
    vlm = [c for c in decode if c.text("engine") == "MLX (mlx-vlm)"]
    others = [c for c in decode if c.text("engine") != "MLX (mlx-vlm)"]
    assert vlm and others
    assert all(rule.matches(c) for c in vlm)
    assert not any(rule.matches(c) for c in others)


@pytest.mark.skipif(not (PUBLISHED_DIR / "ASLB-M3MAX.csv").is_file(), reason="published evidence not shipped")
def test_aslb_mlx_vlm_decode_counted_words_so_it_is_unscored_but_its_prefill_and_other_engines_stay() -> None:
    cases = _rows("ASLB-M3MAX.csv")
    vlm_tg = [c for c in cases if c.metric == "tg" and c.text("engine") == "MLX (mlx-vlm)"]
    # the evidence for the rule: no mlx-vlm run reaches the harness's 512 max_tokens, other engines do
    assert vlm_tg and max(c.number("gen_tokens") or 0 for c in vlm_tg) < 500
    assert any((c.number("gen_tokens") or 0) >= 500 for c in cases if c.text("engine") == "MLX (mlx-lm)")
    assert all("not tokens" in (validation.predict_case(c).reason or "") for c in vlm_tg[:20])
    vlm_pp = [c for c in cases if c.metric == "pp" and c.text("engine") == "MLX (mlx-vlm)"][:20]
    assert vlm_pp and all("not tokens" not in (validation.predict_case(c).reason or "") for c in vlm_pp)
    lm_tg = [c for c in cases if c.metric == "tg" and c.text("engine") == "MLX (mlx-lm)"][:20]
    assert lm_tg and all("not tokens" not in (validation.predict_case(c).reason or "") for c in lm_tg)


def test_an_unscorable_rows_rule_takes_lists_of_metrics_and_engines(tmp_path: Path) -> None:
    rule = _one_rule(tmp_path, 'source = "X"\nmetric = ["pp", "ttft_ms"]\nheading = "h"\nengine = ["a", "b"]')
    assert rule.metrics == ("pp", "ttft_ms") and rule.engines == ("a", "b")


def _prompt_seconds(cases: list[validation.Case], engine: str) -> dict[tuple[str, str], dict[int, float]]:
    """Per (model, quant) of one engine's ASLB prefill rows: prompt length -> median prompt / rate (s)."""
    import statistics

    times: dict[tuple[str, str], dict[int, list[float]]] = {}
    for c in cases:
        if c.metric == "pp" and c.text("engine") == engine and (rate := c.number("value")):
            times.setdefault((c.text("model"), c.text("quant")), {}).setdefault(c.prompt_tokens, []).append(c.prompt_tokens / rate)
    return {k: {p: statistics.median(v) for p, v in by.items()} for k, by in times.items()}


@pytest.mark.skipif(not (PUBLISHED_DIR / "ASLB-M3MAX.csv").is_file(), reason="published evidence not shipped")
def test_aslb_servers_that_reuse_an_identical_prompt_have_their_prefill_and_ttft_unscored() -> None:
    import statistics

    cases = _rows("ASLB-M3MAX.csv")

    def long_over_short(engine: str) -> float:  # the 751-token prompt's time over the 23-token one's
        ratios = [by[751] / by[23] for by in _prompt_seconds(cases, engine).values() if 751 in by and 23 in by]
        assert ratios, engine
        return statistics.median(ratios)

    # the evidence for the rule, in the source's own times: 33x the prompt in about the same time (or less)
    # where the server reuses the cached prompt, several times longer where it does not
    assert long_over_short("llama.cpp (llama-server)") < 1.0 and long_over_short("MLX (mlx-lm)") < 1.5
    assert long_over_short("MLX (mlx-vlm)") > 4.0
    cached = ("llama.cpp (llama-server)", "MLX (mlx-lm)", "Docker Model Runner")
    for engine in cached:
        prompt = [c for c in cases if c.metric in ("pp", "ttft_ms") and c.text("engine") == engine][:12]
        assert prompt and all("cached prompt" in (aliases.unscorable_for(c) or "") for c in prompt), engine
        decode = [c for c in cases if c.metric == "tg" and c.text("engine") == engine][:12]
        assert decode and not any("cached prompt" in (aliases.unscorable_for(c) or "") for c in decode), engine
    others = [c for c in cases if c.metric == "pp" and c.text("engine") in ("MLX (mlx-vlm)", "vllm-mlx", "Ollama")]
    assert others and not any("cached prompt" in (aliases.unscorable_for(c) or "") for c in others)


@pytest.mark.skipif(not (PUBLISHED_DIR / "R9700-TOOLBOX.csv").is_file(), reason="published evidence not shipped")
def test_r9700_bf16_prompts_with_hipblaslt_forced_off_are_unscored_and_nothing_else() -> None:
    cases = _rows("R9700-TOOLBOX.csv")
    forced = [c for c in cases if "a GEMM library forced off" in (aliases.unscorable_for(c) or "")]
    assert forced and all(
        c.metric == "pp" and c.text("quant") == "BF16" and "ROCBLAS_USE_HIPBLASLT=0" in c.text("notes") for c in forced
    )
    default = [c for c in cases if c.metric == "pp" and c.text("quant") == "BF16" and "ROCBLAS_USE_HIPBLASLT=1" in c.text("notes")]
    quantized_off = [c for c in cases if c.metric == "pp" and c.text("quant") != "BF16" and "ROCBLAS_USE_HIPBLASLT=0" in c.text("notes")]
    decode_off = [c for c in cases if c.metric == "tg" and "ROCBLAS_USE_HIPBLASLT=0" in c.text("notes")]
    for kept in (default, quantized_off, decode_off):
        assert kept and not any("forced off" in (aliases.unscorable_for(c) or "") for c in kept)
