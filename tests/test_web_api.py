"""The web API: every endpoint, the CLI's JSON shapes, and 4xx JSON errors for bad requests."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tokometer.catalog import hardware_catalog
from tokometer.cli import cli
from tokometer.web.app import PAGES, STATIC_DIR, create_app
from web_helpers import fake_store_module


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(bench_urls=["http://127.0.0.1:8080/v1"]))


def cli_output(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return result.output


def cli_json(*args: str) -> Any:
    return json.loads(cli_output(*args))


def error_of(response: Any, status: int = 422) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    return body


# --- estimate: the same JSON as `tokometer estimate --json` ------------------------------------


@pytest.mark.parametrize(
    ("body", "argv"),
    [
        ({"params_b": 70, "bits": 16, "bandwidth_gb_per_s": 3350}, ["--params", "70", "--bits", "16", "--bandwidth", "3350"]),
        ({"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4-k-m"}, ["llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4-k-m"]),
        (
            {"model": "qwen3-30b-a3b", "hw": "m2-ultra-76c", "batch": 4, "context_tokens": 8192, "kv_dtype": "q8-0"},
            ["qwen3-30b-a3b", "--hw", "m2-ultra-76c", "--batch", "4", "--context", "8192", "--kv-dtype", "q8-0"],
        ),
        (  # tensor parallel over NVLink
            {"model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8", "tp": 2, "link": "nvlink"},
            ["llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8", "--tp", "2", "--link", "nvlink"],
        ),
        (  # tensor x pipeline over a PCIe link with fewer lanes
            {"model": "qwen3-32b", "hw": "rtx-4090", "tp": 2, "pp": 2, "link": "pcie4x8", "batch": 4},
            ["qwen3-32b", "--hw", "rtx-4090", "--tp", "2", "--pp", "2", "--link", "pcie4x8", "--batch", "4"],
        ),
        (  # speculative decoding
            {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4-k-m", "draft": "llama-3.2-1b", "acceptance": 0.8, "draft_tokens": 5},
            ["llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4-k-m", "--draft", "llama-3.2-1b", "--acceptance", "0.8", "--draft-tokens", "5"],
        ),
        (  # speculative decoding, acceptance assumed (a warning), draft in its own format
            {"model": "llama-3.1-8b", "hw": "h100-sxm", "draft": "llama-3.2-1b", "draft_quant": "q8_0"},
            ["llama-3.1-8b", "--hw", "h100-sxm", "--draft", "llama-3.2-1b", "--draft-quant", "q8_0"],
        ),
        (  # CPU offload: a layer count and a CPU memory system
            {"model": "llama-3.1-70b", "hw": "rtx-4090", "quant": "q4-k-m", "gpu_layers": 24, "cpu_hw": "ddr5-6000-dual-channel"},
            ["llama-3.1-70b", "--hw", "rtx-4090", "-q", "q4-k-m", "--gpu-layers", "24", "--cpu-hw", "ddr5-6000-dual-channel"],
        ),
        (  # CPU offload: a share of the layers, streamed over PCIe
            {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "fp16", "gpu_layers": 0.5, "offload_mode": "stream", "link": "pcie4"},
            ["llama-3.1-8b", "--hw", "rtx-4090", "-q", "fp16", "--gpu-layers", "0.5", "--offload-mode", "stream", "--link", "pcie4"],
        ),
        (  # expert offload: a MoE's routed experts in system RAM
            {"model": "gpt-oss-120b", "hw": "rtx-4090", "offload_experts": "all", "cpu_hw": "ddr5-6000-dual-channel"},
            ["gpt-oss-120b", "--hw", "rtx-4090", "--offload-experts", "all", "--cpu-hw", "ddr5-6000-dual-channel"],
        ),
    ],
)
def test_estimate_is_the_cli_json(client: TestClient, body: dict[str, Any], argv: list[str]) -> None:
    output = cli_output("estimate", *argv)
    expected = json.loads(output)
    posted = client.post("/api/estimate", json=body)
    assert posted.json() == expected
    assert posted.text + "\n" == output  # byte for byte: the same `to_json` rendering
    query = {k: str(v) for k, v in body.items()}
    got = client.get("/api/estimate", params=query)
    assert got.json() == expected
    assert got.text + "\n" == output


def test_lever_sections_are_active_when_set(client: TestClient) -> None:
    setup = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4-k-m"}
    plain = client.post("/api/estimate", json=setup).json()
    assert plain["speculative"]["active"] is False and plain["offload"]["active"] is False
    assert plain["parallel"]["devices"] == 1
    spec = client.post("/api/estimate", json={**setup, "draft": "llama-3.2-1b"}).json()["speculative"]
    assert spec["active"] and spec["speedup"] == pytest.approx(spec["tok_s"] / plain["decode"]["estimate_tok_s"])
    assert spec["acceptance"] == 0.7  # assumed without an acceptance
    par = client.post("/api/estimate", json={**setup, "tp": 2}).json()
    assert par["parallel"]["tp"] == 2 and par["parallel"]["speedup"] > 1
    assert par["decode"]["ceiling_tok_s"] == pytest.approx(2 * plain["decode"]["ceiling_tok_s"])
    off = client.post("/api/estimate", json={**setup, "gpu_layers": "16"}).json()["offload"]
    assert off["active"] and (off["gpu_layers"], off["cpu_layers"], off["cpu_hw"]) == (16, 16, "ddr5-dual-channel")


@pytest.mark.parametrize(("number", "typed"), [(16, "16"), (0.5, "0.5"), (1.0, "1.0"), (0, "0")])
def test_gpu_layers_as_a_number_or_as_typed(client: TestClient, number: float, typed: str) -> None:
    """An integer is a layer count and a float a share, as "16" and "0.5" are on the command line."""
    setup = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "fp16"}
    expected = cli_json("estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "fp16", "--gpu-layers", typed)
    assert client.post("/api/estimate", json={**setup, "gpu_layers": number}).json() == expected
    assert client.post("/api/estimate", json={**setup, "gpu_layers": typed}).json() == expected
    assert client.get("/api/estimate", params={**setup, "gpu_layers": typed}).json() == expected


def test_advise_switches_the_quant_advice_off(client: TestClient) -> None:
    from tokometer.domain.jsontext import to_json
    from tokometer.report.json import estimate_json
    from tokometer.usecases.estimate import estimate

    setup = {"model": "llama-3.1-70b", "hw": "rtx-4090", "quant": "q4-k-m", "gpu_layers": 24}
    advised = client.post("/api/estimate", json=setup).json()
    assert advised == client.post("/api/estimate", json={**setup, "advise": True}).json()
    quiet = client.get("/api/estimate", params={**setup, "advise": "false"})
    assert quiet.text == to_json(estimate_json(estimate(**setup, advise=False)))
    assert quiet.json()["offload"]["advice"] is None


def test_a_bad_tp_is_422_on_the_tp_field(client: TestClient) -> None:
    body = error_of(client.post("/api/estimate", json={"model": "llama-3.1-8b", "hw": "h100-sxm", "tp": 0}))
    assert body["field"] == "tp" and "tp must be a whole number of devices" in body["error"]
    assert error_of(client.get("/api/estimate", params={"tp": "0"}))["field"] == "tp"


@pytest.mark.parametrize(
    ("body", "field", "needle"),
    [
        ({"tp": -2}, "tp", "tp must be a whole number of devices, 1 or more"),
        ({"tp": 1.5}, "tp", "tp must be a whole number"),
        ({"tp": "two"}, "tp", "tp must be a number"),
        ({"pp": 0}, "pp", "pp must be a whole number of devices"),
        ({"pp": 100}, "pp", "more stages than the model's 32 layers"),
        ({"tp": 2, "link": "infiniband"}, "link", "unknown link 'infiniband'"),
        ({"tp": 2, "link": "-5"}, "link", "link bandwidth must be a positive number"),
        ({"link": "nvlink"}, "link", "link needs tp or pp"),
        ({"gpu_layers": "lots"}, "gpu_layers", "gpu_layers must be a layer count or a fraction"),
        ({"gpu_layers": 1.5}, "gpu_layers", "as a fraction must be between 0 and 1"),
        ({"gpu_layers": 99}, "gpu_layers", "more than the model's 32 layers"),
        ({"gpu_layers": True}, "gpu_layers", "gpu_layers must be a layer count"),
        ({"gpu_layers": [3]}, "gpu_layers", "gpu_layers must be a layer count"),
        ({"gpu_layers": 8, "tp": 2}, "gpu_layers", "one lever at a time"),
        ({"cpu_hw": "ddr5-dual-channel"}, "gpu_layers", "need gpu_layers"),
        ({"gpu_layers": 8, "cpu_hw": "h100-sxm"}, "cpu_hw", "cpu_hw must be a CPU memory system"),
        ({"gpu_layers": 8, "cpu_hw": "ddr5-dual-chanel"}, "cpu_hw", "unknown hardware"),
        ({"gpu_layers": 8, "offload_mode": "disk"}, "offload_mode", "offload_mode must be one of cpu, stream"),
        ({"hw": "ddr5-dual-channel", "gpu_layers": 8}, "gpu_layers", "gpu_layers needs a GPU"),
        ({"draft": "llama-3.2-1bb"}, "draft", "did you mean"),
        ({"draft": "qwen3-0.6b"}, "draft", "needs the same tokenizer"),
        ({"draft": "llama-3.2-1b", "acceptance": 1}, "acceptance", "acceptance must be in [0, 1)"),
        ({"draft": "llama-3.2-1b", "acceptance": -0.1}, "acceptance", "acceptance must be in [0, 1)"),
        ({"draft": "llama-3.2-1b", "draft_tokens": 0}, "draft_tokens", "draft_tokens must be an integer from 1 to 64"),
        ({"draft": "llama-3.2-1b", "draft_tokens": 65}, "draft_tokens", "draft_tokens must be an integer from 1 to 64"),
        ({"draft": "llama-3.2-1b", "draft_quant": "q5-zz"}, "draft_quant", "unknown"),
        ({"acceptance": 0.8}, "draft", "need draft MODEL"),
        ({"draft_tokens": 3}, "draft", "need draft MODEL"),
        ({"advise": "maybe"}, "advise", "advise must be true or false"),
    ],
)
def test_bad_levers_are_422_on_their_field(client: TestClient, body: dict[str, Any], field: str, needle: str) -> None:
    answer = error_of(client.post("/api/estimate", json={"model": "llama-3.1-8b", "hw": "rtx-4090", **body}))
    assert needle in answer["error"]
    assert answer["field"] == field


def test_estimate_defaults_match_the_cli(client: TestClient) -> None:
    assert client.post("/api/estimate", json={}).json() == cli_json("estimate")
    assert client.post("/api/estimate", content=b"").json() == cli_json("estimate")


def test_empty_values_mean_not_given(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "", "engine": None, "context_tokens": ""}
    assert client.post("/api/estimate", json=body).json() == cli_json("estimate", "llama-3.1-8b", "--hw", "rtx-4090")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'"text"', "JSON object"),
        (b"\xff\xfe", "not valid JSON"),
        (b'{"parms_b": 7}', "unknown field 'parms_b'"),
        (b'{"params_b": "seven"}', "params_b must be a number"),
        (b'{"params_b": true}', "params_b must be a number"),
        (b'{"params_b": [7]}', "params_b must be a number"),
        (b'{"batch": 1.5}', "batch must be a whole number"),
        (b'{"batch": 1e300}', "batch must be at most"),
        (b'{"model": 7}', "model must be a string"),
        (b'{"backend": "opencl"}', "backend must be one of"),
        (b'{"params_b": -70, "bits": 16, "bandwidth_gb_per_s": 3350}', "params_b must be a positive number"),
        (b'{"params_b": 70, "bits": 0, "bandwidth_gb_per_s": 3350}', "bits must be a positive number"),
        (b'{"params_b": 70, "bits": 100, "bandwidth_gb_per_s": 3350}', "bits must be at most 64"),
        (b'{"bandwidth_gb_per_s": -1}', "bandwidth_gb_per_s must be a positive number"),
        (b'{"batch": 0}', "batch must be a positive number"),
        (b'{"model": "llama-3.1-8b", "params_b": 8}', "either a model name or params_b"),
        (b'{"model": "' + b"x" * 300 + b'"}', "too long"),
    ],
)
def test_malformed_estimate_bodies_are_422_with_a_message(client: TestClient, content: bytes, needle: str) -> None:
    body = error_of(client.post("/api/estimate", content=content, headers={"content-type": "application/json"}))
    assert needle in body["error"]


def test_errors_name_the_field_they_are_about(client: TestClient) -> None:
    assert error_of(client.post("/api/estimate", json={"params_b": -1}))["field"] == "params_b"
    assert error_of(client.post("/api/estimate", json={"bits": 0, "params_b": 7}))["field"] == "bits"
    body = error_of(client.post("/api/estimate", json={"model": "llama-3.1-8b", "hw": "rtx-409"}))
    assert body["field"] == "hw"
    assert "rtx-4090" in body["suggestions"]


def test_unknown_model_says_did_you_mean(client: TestClient) -> None:
    body = error_of(client.post("/api/estimate", json={"model": "llama-3.1-8bb"}))
    assert "did you mean" in body["error"] and "llama-3.1-8b" in body["suggestions"]
    assert body["field"] == "model"


@pytest.mark.parametrize("name", ["meta-llama/Llama-3.1-8B", "/etc/passwd", "model.gguf", "../config.json"])
def test_models_outside_the_catalog_are_never_read_or_fetched(
    client: TestClient, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tokometer.usecases.estimate

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the web app must not resolve files or Hub ids")

    monkeypatch.setattr(tokometer.usecases.estimate, "resolve_model", forbidden)
    body = error_of(client.post("/api/estimate", json={"model": name}))
    assert body["error"].startswith("unknown model")
    draft = error_of(client.post("/api/estimate", json={"model": "llama-3.1-8b", "draft": name}))
    assert draft["error"].startswith("unknown model") and draft["field"] == "draft"


def test_oversized_body_is_rejected(client: TestClient) -> None:
    big = b'{"model": "' + b"a" * 70_000 + b'"}'
    assert "too large" in error_of(client.post("/api/estimate", content=big), 413)["error"]


# --- curves, roofline, utilisation, latency ----------------------------------------------------


def test_context_curve_slows_with_depth(client: TestClient) -> None:
    data = client.post("/api/curve", json={"model": "llama-3.1-8b", "hw": "rtx-4090", "axis": "context"}).json()
    xs = [p["x"] for p in data["points"]]
    assert xs == sorted(xs) and xs[0] == 0 and xs[-1] == 131072
    speeds = [p["decode"]["estimate_tok_s"] for p in data["points"]]
    assert speeds == sorted(speeds, reverse=True)
    for p in data["points"]:
        assert p["decode"]["estimate_tok_s"] <= p["decode"]["ceiling_tok_s"]
    point = data["points"][3]
    single = client.post("/api/estimate", json={"model": "llama-3.1-8b", "hw": "rtx-4090", "context_tokens": point["x"]}).json()
    assert point["decode"] == single["decode"]


def test_batch_curve_grows_the_aggregate(client: TestClient) -> None:
    data = client.get("/api/curve", params={"model": "llama-3.1-8b", "hw": "h100-sxm", "axis": "batch", "values": "1,4,16,64"}).json()
    assert [p["x"] for p in data["points"]] == [1, 4, 16, 64]
    aggregate = [p["decode"]["aggregate_tok_s"] for p in data["points"]]
    assert aggregate == sorted(aggregate)


def test_the_kv_bandwidth_line_is_per_stream_and_never_above_the_ceiling(client: TestClient) -> None:
    """Issue #14 item 5: at batch 16 (8B on a 4090) the line divided the bandwidth by the bytes per
    generated token, 16x the per-stream limit, and sat at 114 tok/s at 64k where the estimate is ~5."""
    from tokometer.usecases.curves import context_points
    from tokometer.usecases.estimate import estimate

    setup = {"model": "llama-3.1-8b", "hw": "rtx-4090", "batch": 16}
    points = client.post("/api/curve", json={**setup, "axis": "context"}).json()["points"]
    for p in points:
        assert p["roofline_tok_s"] <= p["decode"]["ceiling_tok_s"] * (1 + 1e-12)
        assert p["decode"]["estimate_tok_s"] <= p["roofline_tok_s"] * (1 + 1e-12)
    deep = next(p for p in points if p["x"] == 65536)
    assert deep["roofline_tok_s"] < 2 * deep["decode"]["estimate_tok_s"] < 20
    # the same line `estimate --plot` draws: one curve builder
    library = {p.depth_tokens: p.roofline_tok_s for p in context_points(estimate("llama-3.1-8b", hw="rtx-4090", batch=16))}
    assert deep["roofline_tok_s"] == library[65536.0]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"axis": "depth"}, "axis must be context or batch"),
        ({"axis": "batch", "values": "1,x"}, "values must be a number"),
        ({"axis": "batch", "values": list(range(1, 100))}, "at most 64"),
        ({"axis": "batch", "values": {"a": 1}}, "list of numbers"),
        ({"axis": "batch", "values": [0]}, "batch must be a positive number"),
    ],
)
def test_bad_curves_are_422(client: TestClient, body: dict[str, Any], needle: str) -> None:
    assert needle in error_of(client.post("/api/curve", json=body))["error"]


@pytest.mark.parametrize(
    ("batches", "needle"), [([0], "batches must be a positive number"), ("1,x", "batches must be a number")]
)
def test_bad_roofline_batches_are_422(client: TestClient, batches: Any, needle: str) -> None:
    assert needle in error_of(client.post("/api/roofline", json={"batches": batches}))["error"]


def test_roofline_points_sit_under_the_roof(client: TestClient) -> None:
    data = client.post("/api/roofline", json={"model": "llama-3.1-8b", "hw": "h100-sxm", "batch": 8}).json()
    bw = data["bandwidth_gb_per_s"] * 1e9
    peak = data["peak_tflops"]
    assert data["ridge_flop_per_byte"] == pytest.approx(peak * 1e12 / bw)
    intensities = [p["intensity_flop_per_byte"] for p in data["decode"]]
    assert intensities == sorted(intensities)
    for p in [*data["decode"], data["prefill"]]:
        roof = min(peak, bw * p["intensity_flop_per_byte"] / 1e12)
        assert 0 < p["achieved_tflops"] <= roof * 1.0001
    assert data["prefill"]["intensity_flop_per_byte"] > intensities[0]


def test_roofline_decode_is_the_estimates_batching_curve(client: TestClient) -> None:
    setup = {"model": "llama-3.1-8b", "hw": "h100-sxm", "context_tokens": 2048}
    curve = client.post("/api/estimate", json=setup).json()["batching"]["curve"]
    roof = client.post("/api/roofline", json=setup).json()["decode"]
    assert [p["batch"] for p in roof] == [p["batch"] for p in curve] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for r, c in zip(roof, curve, strict=True):
        assert r["aggregate_tok_s"] == c["aggregate_tok_s"] and r["bound"] == c["bound"]
        assert r["intensity_flop_per_byte"] == pytest.approx(
            c["flops_per_step"] / (c["weight_bytes_per_step"] + c["kv_bytes_per_step"]), rel=1e-12
        )
    # the same points as one estimate per batch (what the page computed before)
    asked = [3, 16, 600]
    per_batch = client.post("/api/curve", json={**setup, "axis": "batch", "values": asked}).json()["points"]
    roof = client.post("/api/roofline", json={**setup, "batches": asked}).json()["decode"]
    assert [p["batch"] for p in roof] == asked
    for r, p in zip(roof, per_batch, strict=True):
        dec = p["decode"]
        assert r["bound"] == dec["bound"]
        assert r["aggregate_tok_s"] == pytest.approx(dec["aggregate_tok_s"], rel=1e-12)
        assert r["intensity_flop_per_byte"] == pytest.approx(dec["flops_per_token"] / dec["bytes_per_token"], rel=1e-12)
        assert r["achieved_tflops"] == pytest.approx(dec["aggregate_tok_s"] * dec["flops_per_token"] / 1e12, rel=1e-12)


def test_curves_and_roofline_take_the_levers(client: TestClient) -> None:
    setup = {"model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8", "tp": 2, "link": "nvlink"}
    data = client.post("/api/curve", json={**setup, "axis": "context", "values": [0, 4096]}).json()
    single = client.post("/api/estimate", json={**setup, "context_tokens": 4096}).json()
    assert data["points"][1]["decode"] == single["decode"]
    assert error_of(client.post("/api/curve", json={**setup, "tp": 0, "axis": "batch"}))["field"] == "tp"
    rows = {r["hardware"]["id"]: r for r in client.post("/api/panorama", json={"model": "llama-3.1-70b", "tp": 2}).json()["rows"]}
    alone = client.post("/api/estimate", json={"model": "llama-3.1-70b", "hw": "h100-sxm", "tp": 2}).json()
    assert rows["h100-sxm"]["estimate_tok_s"] == alone["decode"]["estimate_tok_s"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/roofline", {"tp": 2}, "tp"),
        ("/api/roofline", {"gpu_layers": 10}, "gpu_layers"),
        ("/api/utilisation", {"measured_decode_tok_s": 40, "tp": 2}, "tp"),
        ("/api/utilisation", {"measured_decode_tok_s": 40, "draft": "llama-3.2-1b"}, "draft"),
    ],
)
def test_one_device_endpoints_refuse_the_levers(client: TestClient, path: str, body: dict[str, Any], field: str) -> None:
    """Their MBU, MFU and roof divide by one device's datasheet numbers."""
    answer = error_of(client.post(path, json={"model": "llama-3.1-8b", "hw": "h100-sxm", **body}))
    assert answer["field"] == field and f"not taken by {path}" in answer["error"]


def test_roofline_without_a_peak(client: TestClient) -> None:
    data = client.post("/api/roofline", json={"params_b": 7, "bits": 4, "bandwidth_gb_per_s": 100}).json()
    assert data["peak_tflops"] is None and data["ridge_flop_per_byte"] is None and data["prefill"] is None


def test_utilisation_from_the_estimate_bytes_and_flops(client: TestClient) -> None:
    setup = {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "q4-k-m"}
    d = client.post("/api/estimate", json=setup).json()
    data = client.post("/api/utilisation", json={**setup, "measured_decode_tok_s": 120, "measured_prefill_tok_s": 5000}).json()
    u = data["utilisation"]
    assert u["mbu"] == pytest.approx(120 * d["decode"]["bytes_per_token"] / (d["hardware"]["memory_bandwidth_gb_per_s"] * 1e9))
    peak = d["hardware"]["peak_tflops"] * 1e12
    assert u["decode_mfu"] == pytest.approx(120 * d["decode"]["flops_per_token"] / peak)
    assert u["prefill_mfu"] == pytest.approx(5000 * d["prefill"]["flops"] / d["prefill"]["prompt_tokens"] / peak)
    assert u["measured_over_ceiling"] == pytest.approx(120 / d["decode"]["ceiling_tok_s"])
    assert data["estimate"] == d
    assert client.get("/api/utilization", params={**setup, "measured_decode_tok_s": "120"}).json()["utilisation"]["mbu"] == u["mbu"]


def test_utilisation_counts_every_stream_of_a_batch(client: TestClient) -> None:
    setup = {"model": "llama-3.1-8b", "hw": "h100-sxm", "batch": 8}
    d = client.post("/api/estimate", json=setup).json()
    dec = d["decode"]
    u = client.post("/api/utilisation", json={**setup, "measured_decode_tok_s": 50}).json()["utilisation"]
    assert dec["bytes_per_step"] == pytest.approx(8 * dec["bytes_per_token"])
    assert u["mbu"] == pytest.approx(50 * dec["bytes_per_step"] / (d["hardware"]["memory_bandwidth_gb_per_s"] * 1e9))
    assert u["measured_over_estimate"] == pytest.approx(50 / dec["estimate_tok_s"])


def test_utilisation_above_the_ceiling_is_a_finding(client: TestClient) -> None:
    u = client.post("/api/utilisation", json={"params_b": 70, "bits": 16, "bandwidth_gb_per_s": 3350, "measured_decode_tok_s": 30}).json()["utilisation"]
    assert u["verdict_code"] == "above-ceiling" and "finding" in u["notes"][0]
    assert u["decode_mfu"] is None and any("compute peak" in n for n in u["notes"])


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"model": "llama-3.1-8b"}, "measured_decode_tok_s is required"),
        ({"measured_decode_tok_s": -3}, "measured_decode_tok_s must be a positive number"),
        ({"measured_decode_tok_s": "fast"}, "measured_decode_tok_s must be a number"),
        ({"measured_decode_tok_s": 10, "measured_prefill_tok_s": 0}, "measured_prefill_tok_s must be a positive"),
    ],
)
def test_bad_utilisation_is_422(client: TestClient, body: dict[str, Any], needle: str) -> None:
    body_out = error_of(client.post("/api/utilisation", json=body))
    assert needle in body_out["error"]
    assert body_out.get("field") == needle.split(" ")[0]


def test_latency_at_a_rate(client: TestClient) -> None:
    data = client.post("/api/latency", json={"ttft_ms": 500, "output_tokens": 256, "tok_s": 30}).json()
    assert data["e2e_s"] == pytest.approx(0.5 + 255 / 30)
    assert data["verdict_code"] == "fast" and data["reading_time_s"] == [25.6, 51.2]
    slow = client.get("/api/latency", params={"ttft_ms": "0", "tok_s": "2"}).json()
    assert slow["verdict_code"] == "broken" and slow["output_tokens"] == 256


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"tok_s": 30}, "ttft_ms is required"),
        ({"ttft_ms": 100}, "tok_s is required"),
        ({"ttft_ms": -1, "tok_s": 30}, "ttft_ms must be zero or more"),
        ({"ttft_ms": 100, "tok_s": 0}, "tok_s must be a positive number"),
        ({"ttft_ms": 100, "tok_s": 5, "output_tokens": 0}, "output_tokens must be a positive number"),
        ({"ttft_ms": 100, "tok_s": 5, "speed": 1}, "unknown field 'speed'"),
    ],
)
def test_bad_latency_is_422(client: TestClient, body: dict[str, Any], needle: str) -> None:
    assert needle in error_of(client.post("/api/latency", json=body))["error"]


# --- panorama, catalogs ------------------------------------------------------------------------


def test_panorama_covers_every_device(client: TestClient) -> None:
    data = client.post("/api/panorama", json={"model": "llama-3.1-8b", "quant": "q4-k-m"}).json()
    assert len(data["rows"]) == len(hardware_catalog())
    assert data["model"]["id"] == "llama-3.1-8b"
    rows = {r["hardware"]["id"]: r for r in data["rows"]}
    single = client.post("/api/estimate", json={"model": "llama-3.1-8b", "quant": "q4-k-m", "hw": "rtx-4090"}).json()
    assert rows["rtx-4090"]["estimate_tok_s"] == single["decode"]["estimate_tok_s"]
    assert rows["rtx-4090"]["ceiling_tok_s"] == single["decode"]["ceiling_tok_s"]
    assert rows["rtx-4090"]["tier_gb"] == 24 and rows["rtx-4090"]["fits"] is True
    for r in data["rows"]:
        assert r["hardware"]["source"]
        assert r["estimate_tok_s"] <= r["ceiling_tok_s"]


def test_panorama_refuses_a_device(client: TestClient) -> None:
    assert "covers every device" in error_of(client.post("/api/panorama", json={"hw": "rtx-4090"}))["error"]


@pytest.mark.parametrize("kind", ["hardware", "models", "quants", "engines"])
def test_catalog_lists_are_the_cli_json(client: TestClient, kind: str) -> None:
    assert client.get(f"/api/{kind}").json() == cli_json(kind, "list")


def test_hardware_show(client: TestClient) -> None:
    assert client.get("/api/hardware/RTX 4090").json() == cli_json("hardware", "show", "rtx-4090")
    body = error_of(client.get("/api/hardware/rtx-409"), 404)
    assert "rtx-4090" in body["suggestions"]


# --- speed feel --------------------------------------------------------------------------------


def test_feel_plan_and_tokens(client: TestClient) -> None:
    data = client.post("/api/feel", json={"rates": [2, 5, 10, 30, 100], "lang": "fr"}).json()
    assert "".join(data["tokens"]).startswith("Réponse courte")
    assert data["text_tokens"] == len(data["tokens"])
    assert [lane["verdict_code"] for lane in data["lanes"]] == ["broken", "reading", "fast", "fast", "fast"]
    custom = client.get("/api/feel", params={"rates": "5,20", "text": "Hello there, world.", "seconds": "1"}).json()
    assert "".join(custom["tokens"]) == "Hello there, world."
    assert [lane["tokens_after"] for lane in custom["lanes"]] == [5, 5]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"rates": "5,x"}, "rates must be numbers"),
        ({"rates": [0]}, "each rate must be above 0"),
        ({"rates": list(range(1, 12))}, "at most 8 rates"),
        ({"lang": "de"}, "lang must be one of"),
        ({"seconds": -1}, "seconds must be a positive number"),
        ({"seconds": 0}, "seconds must be a positive number"),
        ({"text": 5}, "text must be a string"),
        ({"text": "a" * 20_001}, "too long"),
        ({"speed": 3}, "unknown field 'speed'"),
    ],
)
def test_bad_feel_is_422(client: TestClient, body: dict[str, Any], needle: str) -> None:
    assert needle in error_of(client.post("/api/feel", json=body))["error"]


# --- runs --------------------------------------------------------------------------------------


@pytest.fixture
def fake_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokometer.store", fake_store_module())


def test_runs_with_measured_over_predicted(client: TestClient, fake_store: None) -> None:
    data = client.get("/api/runs").json()
    assert data["available"] is True and data["bench_urls"] == ["http://127.0.0.1:8080/v1"]
    first, second, third = data["runs"]
    assert first["measured_over_estimate"] == pytest.approx(121.5 / 134)
    assert second["measured_over_ceiling"] == pytest.approx(1.25)
    assert third["measured_over_estimate"] is None and third["measured_over_ceiling"] is None
    assert client.get("/api/runs", params={"limit": "1"}).json()["runs"] == [first]
    assert client.get("/api/runs/12").json()["summary"]["requests_ok"] == 20
    assert "no stored run" in error_of(client.get("/api/runs/99"), 404)["error"]


def test_runs_without_a_store_module(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokometer.store", types.ModuleType("tokometer.store"))
    assert client.get("/api/runs").json() == {"available": False, "runs": [], "bench_urls": ["http://127.0.0.1:8080/v1"]}
    error_of(client.get("/api/runs/1"), 404)


def test_runs_with_whatever_store_is_installed(client: TestClient) -> None:
    response = client.get("/api/runs")
    assert response.status_code == 200 and isinstance(response.json()["runs"], list)


def test_bad_runs_limit(client: TestClient) -> None:
    assert "limit must be between" in error_of(client.get("/api/runs", params={"limit": "0"}))["error"]


# --- pages, static files, routing, headers -----------------------------------------------------


@pytest.mark.parametrize("path", ["/", *[f"/{p}" for p in PAGES]])
def test_pages_serve_the_shell(client: TestClient, path: str) -> None:
    response = client.get(path, params={"lang": "fr", "params_b": "70"})
    assert response.status_code == 200
    assert '<script type="module" src="/static/js/main.js">' in response.text
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"


def test_static_files_and_favicon(client: TestClient) -> None:
    for path in ["/static/js/main.js", "/static/css/style.css", "/static/i18n/fr.json", "/static/favicon.svg"]:
        assert client.get(path).status_code == 200, path
    assert client.get("/favicon.ico", follow_redirects=False).headers["location"] == "/static/favicon.svg"


def test_meta(client: TestClient) -> None:
    data = client.get("/api/meta").json()
    assert data["reading_speed_tok_s"] == [5.0, 10.0] and data["broken_stream_tok_s"] == 3.0
    assert data["bench_urls"] == ["http://127.0.0.1:8080/v1"]


def test_unknown_paths_and_methods(client: TestClient) -> None:
    assert "not found" in error_of(client.get("/api/nothing"), 404)["error"]
    assert "method not allowed" in error_of(client.delete("/api/estimate"), 405)["error"]
    assert client.get("/nothing").status_code == 404
    assert client.get("/static/../pyproject.toml").status_code == 404


def test_loopback_host_check() -> None:
    app = create_app(allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://evil.example").get("/api/meta").status_code == 400
    assert TestClient(app, base_url="http://127.0.0.1:8765").get("/api/meta").status_code == 200


# --- translations ------------------------------------------------------------------------------


def test_translations_have_the_same_keys() -> None:
    en = json.loads((STATIC_DIR / "i18n" / "en.json").read_text(encoding="utf-8"))
    fr = json.loads((STATIC_DIR / "i18n" / "fr.json").read_text(encoding="utf-8"))
    assert set(en) == set(fr)
    assert all(value.strip() for value in [*en.values(), *fr.values()])
    for key in en:
        assert set(re.findall(r"\{\w+\}", en[key])) == set(re.findall(r"\{\w+\}", fr[key])), key


def test_every_literal_key_the_pages_use_is_translated() -> None:
    en = json.loads((STATIC_DIR / "i18n" / "en.json").read_text(encoding="utf-8"))
    used = set()
    for path in Path(STATIC_DIR / "js").rglob("*.js"):
        used |= set(re.findall(r"\bt\('([\w.-]+)'", path.read_text(encoding="utf-8")))
    assert used, "no t('...') calls found"
    assert sorted(used - set(en)) == []
