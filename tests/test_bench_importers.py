"""Importing llama-bench and vllm bench serve results into tokometer's run shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench_fixtures import bench_home, run_cli  # noqa: F401
from tokometer.bench.importers import detect_format, from_llama_bench, from_vllm_bench
from tokometer.errors import InputError
from tokometer.store import open_store
from tokometer.usecases.benchmark import recompute

IDENTITY = {
    "build_commit": "8cf427ff", "build_number": 5163, "cpu_info": "AMD Ryzen 7 7800X3D 8-Core Processor",
    "gpu_info": "NVIDIA GeForce RTX 4080", "backends": "CUDA", "model_filename": "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf",
    "model_type": "qwen2 7B Q4_K - Medium", "model_size": 4677120000, "model_n_params": 7615616512, "n_gpu_layers": -1,
}  # fmt: skip


def llama_bench(depths: tuple[int, ...] = (0,)) -> list[dict[str, Any]]:
    tests = []
    for depth in depths:
        tests.append({**IDENTITY, "n_prompt": 512, "n_gen": 0, "n_depth": depth, "test_time": "2025-04-24T11:58:50Z", "avg_ns": 72135640, "avg_ts": 7100.0, "samples_ns": [74601900, 71632900, 70745500], "samples_ts": [6863.1, 7147.55, 7237.21]})
        tests.append({**IDENTITY, "n_prompt": 0, "n_gen": 128, "n_depth": depth, "test_time": "2025-04-24T11:58:51Z", "avg_ns": 1076767880, "avg_ts": 118.9 - depth / 1000, "samples_ns": [1075361300, 1065089400, 1071761200], "samples_ts": [119.03 - depth / 1000, 120.178 - depth / 1000, 119.43 - depth / 1000]})
    return tests


def test_llama_bench_samples_become_decode_and_prefill() -> None:
    run = from_llama_bench(llama_bench(), source_file="lb.json")
    s = run["summary"]
    assert run["source"] == "llama-bench" and run["model"] == "qwen2 7B Q4_K - Medium"
    assert s["decode_tps"]["median"] == pytest.approx(119.43)
    assert s["decode_tps"]["n"] == 3
    assert s["prefill_tps"]["median"] == pytest.approx(7147.55)
    assert s["ttft_ms"]["median"] == pytest.approx(71.6329)
    assert s["ttft_prompt_tokens"] == 512
    assert run["server"]["identity"]["build_commit"] == "8cf427ff"
    assert len(run["requests"]) == 6 and run["mode"] == "speed"


def test_llama_bench_depths_become_levels() -> None:
    run = from_llama_bench(llama_bench((0, 4096)))
    assert run["mode"] == "depth"
    assert [lv["label"] for lv in run["levels"]] == ["depth=0", "depth=4096"]
    assert run["levels"][1]["summary"]["decode_tps"]["median"] == pytest.approx(119.43 - 4.096)


def vllm_detailed() -> dict[str, Any]:
    return {
        "date": "20250424-115851", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": 3,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 2, "duration": 2.0, "completed": 2,
        "request_throughput": 1.0, "output_throughput": 100.0, "median_ttft_ms": 120.0, "median_tpot_ms": 10.0,
        "input_lens": [100, 100, 100], "output_lens": [11, 21, 0], "ttfts": [0.1, 0.2, 0.0],
        "itls": [[0.01] * 10, [0.02] * 10, []], "errors": ["", "", "Bad Request"],
    }  # fmt: skip


def test_vllm_detailed_results_are_recomputed_with_our_formulas() -> None:
    run = from_vllm_bench(vllm_detailed())
    s = run["summary"]
    assert run["started_at"] == "2025-04-24T11:58:51+00:00"
    assert run["mode"] == "concurrency" and run["levels"][0]["label"] == "concurrency=2"
    assert (s["requests_ok"], s["requests_failed"]) == (2, 1)
    # request 2: 21 tokens, 10 chunks of 20 ms: the server count wins over chunk counting
    decode = sorted(r["metrics"]["decode_tps"] for r in run["requests"] if r["ok"])
    assert decode == pytest.approx([100.0, 100.0])
    assert s["ttft_ms"]["median"] == pytest.approx(150.0)
    assert s["output_throughput_tps"] == 100.0
    assert any("start times" in n for n in run["notes"])


def test_vllm_summary_only_results_take_the_file_medians() -> None:
    data = {k: v for k, v in vllm_detailed().items() if k not in ("input_lens", "output_lens", "ttfts", "itls", "errors")}
    data["max_concurrency"] = None
    data["request_rate"] = 4.0
    run = from_vllm_bench(data)
    assert run["summary"]["decode_tps"]["median"] == pytest.approx(100.0)
    assert run["summary"]["ttft_ms"]["median"] == 120.0
    assert run["summary"]["requests_failed"] == 1
    assert run["levels"][0]["label"] == "rate=4.0"


def test_unknown_files_are_rejected() -> None:
    with pytest.raises(InputError):
        detect_format({"something": "else"})
    with pytest.raises(InputError):
        detect_format([1, 2])


def test_cli_import_llama_bench_jsonl_and_vllm(tmp_path: Path) -> None:
    lb = tmp_path / "lb.jsonl"
    lb.write_text("\n".join(json.dumps(t) for t in llama_bench()) + "\n")
    vl = tmp_path / "vllm.json"
    vl.write_text(json.dumps(vllm_detailed()))
    code, out, err = run_cli(["runs", "import", str(lb), str(vl), "--json"])
    assert code == 0, err
    imported = json.loads(out)
    assert [i["source"] for i in imported] == ["llama-bench", "vllm-bench"]
    with open_store() as store:
        runs = store.list_runs()
        assert runs[0].source == "vllm-bench" and runs[1].summary is not None
        assert runs[1].summary.decode_tps.median == pytest.approx(119.43)
        again = recompute(store, imported[1]["id"])
        assert again is not None and again.requests_ok == 2


def test_cli_export_then_import_round_trips(tmp_path: Path) -> None:
    lb = tmp_path / "lb.json"
    lb.write_text(json.dumps(llama_bench()))
    assert run_cli(["runs", "import", str(lb)])[0] == 0
    out_file = tmp_path / "export.json"
    assert run_cli(["runs", "export", "--format", "json", "-o", str(out_file)])[0] == 0
    code, out, _ = run_cli(["runs", "import", str(out_file), "--json"])
    assert code == 0 and json.loads(out)[0]["source"] == "llama-bench"
    with open_store() as store:
        first, second = store.get_runs([1, 2])
    assert first.summary == second.summary
    assert len(first.requests) == len(second.requests) == 6


def test_cli_import_of_garbage_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json at all\n")
    code, out, err = run_cli(["runs", "import", str(bad)])
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_vllm_default_rate_inf_without_max_concurrency_imports() -> None:
    data = {**vllm_detailed(), "max_concurrency": None, "request_rate": "inf"}
    run = from_vllm_bench(data)
    assert run["mode"] == "rate" and run["levels"][0]["label"] == "rate=inf"
    assert run["levels"][0]["rate"] == "inf"
    assert run["summary"]["requests_ok"] == 2


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"ttfts": "x"}, "ttfts is str, expected a list"),
        ({"ttfts": [-0.1, 0.2, 0.0]}, "ttfts[0] is -0.1, expected a number of at least 0"),
        ({"output_lens": ["a", 21, 0]}, "output_lens[0] is 'a', expected a number"),
        ({"itls": [[1e-9] * 10, [0.02] * 10, []]}, "beyond any hardware"),
        ({"itls": [[0.0] * 10, [0.02] * 10, []]}, "itls[0] adds up to 0.0 s"),
        ({"request_rate": "fast"}, "request_rate is 'fast'"),
        ({"median_tpot_ms": 0}, "median_tpot_ms is 0"),
    ],
)
def test_cli_import_refuses_impossible_vllm_files_in_one_line(tmp_path: Path, change: dict[str, Any], words: str) -> None:
    path = tmp_path / "v.json"
    path.write_text(json.dumps({**vllm_detailed(), **change}))
    code, out, err = run_cli(["runs", "import", str(path)])
    assert code == 2 and not out
    assert err.startswith(f"error: {path}: ") and words in err and len(err.strip().splitlines()) == 1
    with open_store() as store:
        assert store.count() == 0


@pytest.mark.parametrize("bad", [0.0, -5.0, 1e9, "fast"])
def test_cli_import_refuses_impossible_llama_bench_speeds(tmp_path: Path, bad: Any) -> None:
    tests = llama_bench()
    tests[1]["samples_ts"][0] = bad
    path = tmp_path / "lb.json"
    path.write_text(json.dumps(tests))
    code, _, err = run_cli(["runs", "import", str(path)])
    assert code == 2 and "test 1 samples_ts[0]" in err and "Traceback" not in err


def test_cli_import_of_truncated_and_huge_files_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tokometer.bench.importers as importers

    text = json.dumps(vllm_detailed())
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    code, _, err = run_cli(["runs", "import", str(cut)])
    assert code == 2 and "is not valid JSON (truncated?)" in err
    monkeypatch.setattr(importers, "MAX_IMPORT_BYTES", 100)
    big = tmp_path / "big.json"
    big.write_text(text)
    code, _, err = run_cli(["runs", "import", str(big)])
    assert code == 2 and "over the 100-byte limit" in err
