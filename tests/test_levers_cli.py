"""The levers as a user types them: every flag in --help and under a stable --json key, bad input
as one line and exit code 2, and the utilization / fit / sweep commands."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.helpers import cli, run_cli

ORIGINAL_KEYS = {
    "model": ["name", "id", "architecture", "total_params", "active_params", "weight_bytes", "bits_per_weight",
              "quant", "n_layers", "is_moe", "source"],
    "hardware": ["id", "name", "memory_bandwidth_gb_per_s", "memory_gb", "peak_tflops", "peak_dtype", "source"],
    "engine": ["id", "name", "efficiency"],
    "decode": ["ceiling_tok_s", "estimate_tok_s", "interval_tok_s", "realised_fraction", "aggregate_tok_s",
               "aggregate_ceiling_tok_s", "batch", "depth_tokens", "bytes_per_token", "weight_bytes_per_token",
               "kv_bytes_per_token", "kv_write_bytes_per_token", "bytes_per_step", "flops_per_token",
               "step_time_s", "bound", "times_s", "ridge_batch"],
    "kv_cache": ["dtype", "bytes_per_token", "bytes_per_token_long_context", "bytes_at_context"],
    "prefill": ["prompt_tokens", "tok_s", "time_s", "ttft_s", "flops", "bound", "efficiency"],
    "latency": ["ttft_s", "tpot_s", "e2e_s", "output_tokens", "verdict"],
    "memory": ["total_gb", "weights_gb", "kv_cache_gb", "runtime_overhead_gb", "available_gb", "device_memory_gb",
               "fits", "context_tokens", "sessions", "max_context_tokens", "max_context_memory_tokens", "max_sessions"],
}
LEVER_KEYS = {
    "speculative": ["active", "draft", "draft_quant", "draft_tokenizer", "draft_weights_gb", "acceptance",
                    "draft_tokens", "tokens_per_pass", "draft_step_time_s", "verify_time_s", "pass_time_s", "tok_s",
                    "ceiling_tok_s", "baseline_tok_s", "speedup", "break_even_acceptance", "tpot_s", "e2e_s"],
    "parallel": ["tp", "pp", "devices", "link", "link_kind", "link_gb_per_s", "link_efficiency",
                 "link_hop_latency_us", "allreduce_launch_us", "allreduces_per_step", "allreduce_bytes",
                 "allreduce_each_s", "allreduce_protocol", "allreduce_time_s", "pipeline_hops", "pipeline_hop_time_s", "comm_time_s",
                 "kv_shards", "single_device_tok_s", "speedup", "memory_per_device_gb", "usable_per_device_gb",
                 "fits_per_device", "sources"],
    "offload": ["active", "gpu_layers", "n_layers", "cpu_layers", "mode", "cpu_hw", "cpu_bandwidth_gb_per_s", "link",
                "link_gb_per_s", "gpu_bytes_per_token", "cpu_bytes_per_token", "gpu_time_s", "cpu_time_s",
                "transfer_time_s", "gpu_only_tok_s", "cpu_only_tok_s", "gpu_weights_gb", "cpu_weights_gb",
                "gpu_kv_gb", "cpu_kv_gb", "cpu_memory_gb", "cpu_available_gb", "fits_cpu", "advice", "curve"],
    "batching": ["batch", "per_stream_tok_s", "aggregate_tok_s", "ridge_batch", "compute_bound_batch", "max_batch",
                 "n_experts", "experts_per_token", "experts_touched", "kv_bytes_per_step", "curve"],
    "context": ["depth_tokens", "kv_dtype", "kv_bytes_per_token", "empty_tok_s", "at_depth_tok_s", "relative_speed",
                "max_context_tokens", "curve"],
}


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, *args, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("estimate", ["--draft", "--draft-quant", "--acceptance", "--draft-tokens", "--tp", "--pp", "--link",
                      "--gpu-layers", "--cpu-hw", "--offload-mode", "--plot", "--kv-dtype", "--batch", "--context",
                      "--json"]),
        ("utilization", ["--measured-decode", "--measured-prefill", "--prompt", "--hw", "--tp", "--gpu-layers",
                         "--json"]),
        ("fit", ["--hw", "--context", "--min-speed", "--engine", "--sessions", "--best", "--all", "--json"]),
        ("sweep", ["--model", "--hw", "--quant", "--context", "--batch", "--format", "--output", "--plot", "--json"]),
    ],
)
def test_every_flag_is_in_help(capsys: pytest.CaptureFixture[str], command: str, flags: list[str]) -> None:
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0
    for flag in flags:
        assert flag in out, f"{command} --help lacks {flag}"


def test_existing_json_keys_are_unchanged_and_lever_keys_are_always_there(capsys: pytest.CaptureFixture[str]) -> None:
    plain = as_json(capsys, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4_k_m")
    levered = as_json(
        capsys, "estimate", "llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8", "--tp", "2", "--link", "nvlink",
        "--draft", "llama-3.2-1b", "--acceptance", "0.8", "--draft-tokens", "4",
    )
    offloaded = as_json(capsys, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "fp16", "--gpu-layers", "0.8")
    for data in (plain, levered, offloaded):
        for section, keys in {**ORIGINAL_KEYS, **LEVER_KEYS}.items():
            assert set(keys) <= set(data[section]), (section, set(keys) - set(data[section]))
    assert plain["speculative"]["active"] is False and plain["offload"]["active"] is False
    assert plain["parallel"]["tp"] == 1 and plain["parallel"]["link"] is None
    assert levered["speculative"]["acceptance"] == 0.8 and levered["speculative"]["draft_tokens"] == 4
    assert levered["speculative"]["draft"] == "llama-3.2-1b"
    assert levered["parallel"]["tp"] == 2 and levered["parallel"]["link"] == "nvlink"
    assert levered["parallel"]["link_gb_per_s"] == 450.0
    assert offloaded["offload"]["active"] is True and offloaded["offload"]["gpu_layers"] == 26
    assert offloaded["offload"]["cpu_hw"] == "ddr5-dual-channel"
    assert len(offloaded["offload"]["curve"]) == 33
    assert plain["batching"]["curve"][0]["batch"] == 1
    assert plain["context"]["curve"][0]["depth_tokens"] == 0


def test_link_forms_land_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    for link, name, gb_s in [("pcie4x8", "pcie4x8", 15.752), ("pcie5", "pcie5x16", 63.008), ("40", "40 GB/s", 40.0)]:
        data = as_json(capsys, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "--tp", "2", "--link", link)
        assert data["parallel"]["link"] == name
        assert data["parallel"]["link_gb_per_s"] == pytest.approx(gb_s)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--draft", "llama-3.2-1b", "--acceptance", "1.0"], "--acceptance must be in [0, 1)"),
        (["--draft", "llama-3.2-1b", "--acceptance", "-0.1"], "--acceptance must be in [0, 1)"),
        (["--draft", "llama-3.2-1b", "--draft-tokens", "0"], "--draft-tokens must be"),
        (["--acceptance", "0.8"], "need --draft"),
        (["--draft", "qwen3-0.6b"], "same tokenizer"),
        (["--draft", "no-such-draft"], "unknown model"),
        (["--tp", "0"], "--tp must be a whole number"),
        (["--pp", "0"], "--pp must be a whole number"),
        (["--pp", "99"], "more stages than"),
        (["--gpu-layers", "33"], "more than the model's 32 layers"),
        (["--gpu-layers", "1.5"], "between 0 and 1"),
        (["--gpu-layers", "lots"], "--gpu-layers must be"),
        (["--gpu-layers", "-3"], "zero or more"),
        (["--tp", "2", "--link", "pcie9"], "PCIe generation 9"),
        (["--tp", "2", "--link", "banana"], "unknown link 'banana'"),
        (["--tp", "2", "--link", "pcie4x3"], "lane count"),
        (["--tp", "2", "--link", "-5"], "positive number of GB/s"),
        (["--tp", "2", "--link", "nvlink"], "no NVLink"),
        (["--link", "pcie4"], "--link needs --tp"),
        (["--tp", "2", "--gpu-layers", "10"], "one lever at a time"),
        (["--cpu-hw", "ddr5-dual-channel"], "need --gpu-layers"),
        (["--gpu-layers", "10", "--cpu-hw", "rtx-3090"], "must be a CPU memory system"),
        (["--gpu-layers", "10", "--cpu-hw", "ddr9"], "unknown hardware"),
    ],
)
def test_bad_lever_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = cli(capsys, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", *args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and out == ""


def test_gpu_layers_on_a_cpu_is_refused_as_a_user(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli("estimate", "llama-3.1-8b", "--hw", "ddr5-dual-channel", "--gpu-layers", "10")
    assert r.code == 2 and "needs a GPU" in r.err and len(r.err.strip().splitlines()) == 1


def test_estimate_text_shows_the_levers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(
        capsys, "estimate", "llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8", "--tp", "2",
        "--draft", "llama-3.2-1b", "--acceptance", "0.8",
    )
    assert code == 0
    assert "decode, speculative (llama-3.2-1b, a=0.8, k=4)" in out
    assert "parallel: TP 2 x PP 1 over nvlink" in out
    assert "context:" in out and "batching:" in out
    code, out, _ = cli(capsys, "estimate", "qwen2.5-32b", "--hw", "rtx-4090", "-q", "q5_k_m", "--gpu-layers", "0.8")
    assert "offload: 51/64 layers on the GPU" in out
    assert "drop a quant step rather than offload" in out


def test_utilization_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["utilization", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4_k_m"]
    expected = as_json(capsys, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4_k_m")["decode"]
    ok = as_json(capsys, *base, "--measured-decode", f"{expected['estimate_tok_s']:.3f}")["utilization"]
    assert "as expected" in ok["verdict"]
    assert ok["mbu"] == pytest.approx(expected["bytes_per_step"] * expected["estimate_tok_s"] / 1008e9, rel=1e-3)
    above = as_json(capsys, *base, "--measured-decode", str(expected["ceiling_tok_s"] * 1.3))["utilization"]
    assert above["ceiling_fraction"] > 1
    assert "above the physical ceiling" in above["verdict"]
    for cause in ("wrong spec", "cache hit", "speculative decoding", "mis-counted tokens"):
        assert cause in above["verdict"]
    slow = as_json(capsys, *base, "--measured-decode", "9")["utilization"]
    assert "far below" in slow["verdict"] and "offload" in slow["verdict"]
    assert any("CPU-only speed" in f for f in slow["findings"])
    pre = as_json(capsys, *base, "--measured-decode", "120", "--measured-prefill", "3000", "--prompt", "2048")
    u = pre["utilization"]
    assert 0 < u["prefill_mfu"] < 1 and u["prefill_ceiling_fraction"] < 1
    code, out, err = cli(capsys, *base, "--measured-decode", "45")
    assert code == 0 and "MBU" in out and "verdict:" in out
    code, _, err = cli(capsys, *base, "--measured-decode", "-4")
    assert code == 2 and "--measured-decode must be a positive number" in err
    code, _, err = cli(capsys, *base, "--measured-decode", "40", "--measured-prefill", "900", "--prompt", "0")
    assert code == 2 and "--prompt" in err


def test_fit_lists_what_fits_with_speed_and_room(capsys: pytest.CaptureFixture[str]) -> None:
    data = as_json(capsys, "fit", "--hw", "rtx-4090", "--context", "8192", "--min-speed", "10")
    rows = data["rows"]
    assert rows and all(r["fits"] and r["estimate_tok_s"] >= 10 and r["ceiling_tok_s"] >= r["estimate_tok_s"] for r in rows)
    names = {(r["model"], r["quant"]) for r in rows}
    assert ("llama-3.1-8b", "q4-k-m") in names and ("llama-3.1-8b", "bf16") in names
    assert ("llama-3.1-70b", "q4-k-m") not in names  # 43 GB
    # llama.cpp has no FP8 weight type: FP8 rows on a GeForce come from an engine that runs FP8
    fp8_engines = {r["engine"] for r in rows if r["quant"] == "fp8"}
    assert fp8_engines and "llama-cpp" not in fp8_engines
    assert all(r["engine"] == "llama-cpp" for r in rows if r["quant"] in ("q4-k-m", "q8-0"))
    assert all(r["max_context_tokens"] >= 8192 and r["max_sessions"] >= 1 for r in rows)
    everything = as_json(capsys, "fit", "--hw", "rtx-4090", "--all", "--model", "llama-3.1-70b")["rows"]
    assert {r["quant"] for r in everything} >= {"bf16", "q8-0", "q4-k-m", "q2-k"}
    assert all(not r["ok"] for r in everything if r["quant"] in ("bf16", "q8-0", "q4-k-m"))
    # on an H200, bf16 70B (141 GB) does not fit but FP8 does, with an FP8-capable engine
    hopper = as_json(capsys, "fit", "--hw", "h200", "--model", "llama-3.1-70b", "--best")["rows"]
    assert [r["quant"] for r in hopper] == ["fp8"] and hopper[0]["engine"] == "vllm"
    code, out, _ = cli(capsys, "fit", "--hw", "rtx-4090", "--best")
    assert code == 0 and "qwen3-30b-a3b" in out


def test_sweep_formats(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    args = ["sweep", "--model", "llama-3.1-8b,qwen3-30b-a3b", "--hw", "rtx-4090", "--hw", "h100-sxm",
            "-q", "q4_k_m,q8_0", "--context", "0,32768", "--batch", "1,16"]
    data = as_json(capsys, *args)
    assert data["shape"] == [2, 2, 2, 2, 2] and len(data["rows"]) == 32
    row = data["rows"][0]
    assert set(row) >= {"model", "hardware", "quant", "engine", "context_tokens", "batch", "ceiling_tok_s",
                        "estimate_tok_s", "aggregate_tok_s", "bound", "memory_gb", "fits"}
    code, out, _ = cli(capsys, *args, "--format", "csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("model,hardware,quant") and len(lines) == 33
    code, out, _ = cli(capsys, *args)
    assert code == 0 and "estimate" in out.splitlines()[0]
    target = tmp_path / "sweep.csv"
    code, _, err = cli(capsys, *args, "--format", "csv", "--output", str(target))
    assert code == 0 and len(target.read_text().splitlines()) == 33 and "32 setups" in err
    code, _, err = cli(capsys, "sweep", "--context", "-1")
    assert code == 2 and "--context" in err
    code, _, err = cli(capsys, "sweep", "--batch", "two")
    assert code == 2 and "whole numbers" in err


def test_fit_shows_named_columns_user_names_and_the_top_rows() -> None:
    """Issue #14, item 11: every column has a header, quants and engines read as users write them, and
    one question prints the top rows (--all for everything)."""
    from tokometer.report.estimate import FIT_TOP_ROWS

    r = run_cli("fit", "--hw", "rtx-4090")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    header, rule = lines[2], lines[3]
    assert len(header.split()) >= len(rule.split()) - 1  # "weights GB" and "needs GB" are two words each
    assert header.rstrip().endswith("verdict")
    body = lines[4:4 + FIT_TOP_ROWS]
    assert all("q2-k" not in line and "llama-cpp" not in line for line in body)
    assert any("Q4_K_M" in line or "Q2_K" in line for line in body)
    assert "--all lists every row" in r.out
    everything = run_cli("fit", "--hw", "rtx-4090", "--all")
    assert len(everything.out.splitlines()) > len(lines) + FIT_TOP_ROWS


def test_utilization_far_below_on_a_cpu_names_a_cpus_culprits() -> None:
    from tokometer.usecases.utilization import utilization

    cpu = utilization("llama-3.1-8b", "ddr5-dual-channel", measured_decode_tok_s=1.0)
    gpu = utilization("llama-3.1-8b", "rtx-4090", measured_decode_tok_s=10.0)
    assert "far below" in cpu.utilisation.verdict and "offloaded" not in cpu.utilisation.verdict
    assert "threads" in cpu.utilisation.verdict
    assert "offloaded" in gpu.utilisation.verdict


def test_one_speculative_rate_feeds_every_line_that_follows(capsys: pytest.CaptureFixture[str]) -> None:
    """70B on a 4090 with 40 layers offloaded and a 1B draft: the speculative row said 8.5 tok/s while
    end-to-end (100 s) and the verdict ("too slow ... below 3 tok/s") came from the plain 2.6 tok/s."""
    args = ("estimate", "llama-3.1-70b", "--hw", "rtx-4090", "--draft", "llama-3.2-1b", "--gpu-layers", "40")
    data = as_json(capsys, *args)
    spec, lat = data["speculative"], data["latency"]
    assert spec["tok_s"] > 2 * data["decode"]["estimate_tok_s"]  # the draft pays off here
    assert lat["tpot_s"] == pytest.approx(spec["tpot_s"]) and lat["e2e_s"] == pytest.approx(spec["e2e_s"])
    assert lat["e2e_s"] == pytest.approx(lat["ttft_s"] + (lat["output_tokens"] - 1) * lat["tpot_s"])
    assert 1 / lat["tpot_s"] == pytest.approx(spec["tok_s"], rel=0.05)  # mean decode depth vs the workload's
    assert "too slow" not in lat["verdict"]
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    e2e_line = next(line for line in out.splitlines() if line.startswith("end-to-end"))
    assert f"{lat['e2e_s']:.2f} s" in e2e_line
    feel = next(line for line in out.splitlines() if line.startswith("feel"))
    assert feel == f"feel: {lat['verdict']}"
    plain = as_json(capsys, *args[:-4], "--gpu-layers", "40")
    assert plain["latency"]["e2e_s"] > 2 * lat["e2e_s"] and "too slow" in plain["latency"]["verdict"]
