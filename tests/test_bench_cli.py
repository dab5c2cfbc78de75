"""`tokometer bench` and `tokometer runs ...` end to end against the synthetic server."""

from __future__ import annotations

import csv
import io
import json

import pytest

from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.catalog import tokometer_home
from tokometer.store import open_store

pytestmark = pytest.mark.timeout(120)


def bench_json(url: str, *extra: str) -> dict[str, object]:
    code, out, err = run_cli(["bench", url, "--max-tokens", "30", "--prompt-tokens", "200", "--runs", "3", "--json", *extra])
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_bench_json_has_the_summary_fields_and_is_stored() -> None:
    with synthetic(tok_s=150.0, ttft_s=0.01, flavor="llamacpp") as server:
        data = bench_json(server.url)
    summary = data["summary"]
    assert isinstance(summary, dict)
    assert summary["decode_tps"]["median"] == pytest.approx(150.0, rel=0.1)
    assert summary["ttft_ms"]["median"] > 10.0
    assert summary["requests_ok"] == 6 and summary["requests_failed"] == 0
    assert data["id"] == 1 and data["requests_recorded"] == 7
    assert data["prediction"] is None and data["grading"]["verdict"] == "no prediction to grade against"
    assert data["definitions"]["decode_tps"].startswith("(N - 1)")
    with open_store() as store:
        run = store.get_run(1)
    assert run.summary.requests_ok == 6 and len(run.requests) == 7


def test_bench_graded_against_a_catalog_prediction() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.01) as server:
        data = bench_json(server.url, "--predict-model", "llama-3.1-8b", "-q", "q4_k_m", "--hw", "rtx-4090")
    prediction = data["prediction"]
    grading = data["grading"]
    assert isinstance(prediction, dict) and isinstance(grading, dict)
    assert prediction["hardware"] == "rtx-4090" and prediction["ceiling_tok_s"] > 150
    assert grading["realised_fraction"] == pytest.approx(100.0 / prediction["ceiling_tok_s"], rel=0.1)
    assert grading["mbu"] is not None
    assert data["hardware"] == "rtx-4090"
    assert "estimate" in prediction  # the full estimate rides along


def test_bench_concurrency_levels_are_graded_against_batched_predictions() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.01) as server:
        code, out, err = run_cli(["bench", server.url, "--concurrency", "1,4", "--runs", "1", "--max-tokens", "20", "--json", "--predict-model", "llama-3.1-8b", "-q", "q4_k_m", "--hw", "rtx-4090"])
    assert code == 0, err
    levels = json.loads(out)["levels"]
    assert [lv["concurrency"] for lv in levels] == [1, 4]
    assert levels[1]["prediction"]["batch"] == 4
    assert levels[1]["grading"]["measured_aggregate_tps"] == pytest.approx(400.0, rel=0.15)


def test_text_output_and_runs_commands() -> None:
    with synthetic(tok_s=200.0, ttft_s=0.01, flavor="ollama") as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "20", "--prompt-tokens", "100", "--runs", "2"])
        assert code == 0, err
        assert "decode speed (after first token)" in out and "saved as run #1" in out
        code, out, err = run_cli(["bench", server.url + "/api/generate", "--max-tokens", "20", "--prompt-tokens", "0", "--runs", "2"])
        assert code == 0, err
    code, out, _ = run_cli(["runs", "list"])
    assert code == 0 and "synthetic" in out and out.count("\n") >= 4
    code, out, _ = run_cli(["runs", "list", "--json"])
    listed = json.loads(out)
    assert [r["id"] for r in listed] == [2, 1]
    assert set(listed[0]["summary"]) >= {"decode_tps", "ttft_ms", "requests_ok", "requests_failed"}
    code, out, _ = run_cli(["runs", "show", "1", "--requests"])
    assert code == 0 and "cold" in out and "decode" in out
    code, out, _ = run_cli(["runs", "show", "1", "--json"])
    assert json.loads(out)["server"]["engine"] == "ollama" and "requests" not in json.loads(out)
    code, out, _ = run_cli(["runs", "compare", "1", "2"])
    assert code == 0 and "#1" in out and "#2" in out and "decode tok/s" in out
    code, out, _ = run_cli(["runs", "compare", "1", "2", "--json"])
    assert json.loads(out)["rows"][0]["metric"] == "decode tok/s"
    code, out, _ = run_cli(["runs", "export", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["id"] for r in rows] == ["2", "1"] and float(rows[0]["decode_tps_median"]) > 100
    code, out, _ = run_cli(["runs", "export", "1", "--format", "csv", "--requests"])
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 5 and rows[0]["phase"] == "cold"
    code, out, _ = run_cli(["runs", "export", "1", "--json"])
    assert json.loads(out)[0]["requests"][0]["event_times_s"]
    code, out, _ = run_cli(["runs", "delete", "2", "--yes"])
    assert code == 0
    assert run_cli(["runs", "show", "2"])[0] == 2


def test_runs_path() -> None:
    home = tokometer_home()
    code, out, _ = run_cli(["runs", "path"])
    assert code == 0 and out.strip() == str(home / "runs.db")
    code, out, _ = run_cli(["runs", "path", "--json"])
    assert json.loads(out) == {"path": str(home / "runs.db"), "exists": False}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench", "http://127.0.0.1:9", "--runs", "0"], "--runs must be at least 1"),
        (["bench", "http://127.0.0.1:9", "--depth", "0,x"], "comma-separated"),
        (["bench", "http://127.0.0.1:9", "--depth", "0", "--concurrency", "2"], "choose one of"),
        (["bench", "http://127.0.0.1:9", "--hw", "local"], "run `tokometer probe` first"),
        (["bench", "http://127.0.0.1:9", "--predict-model", "llama-3.1-8b"], "--predict-model needs --hw"),
        (["bench", "http://127.0.0.1:9", "--predict-model", "no-such-model", "--hw", "rtx-4090"], "unknown model"),
        (["bench", "ftp://x"], "not an http(s) URL"),
        (["runs", "show", "99"], "no run #99"),
        (["runs", "compare", "1"], "at least two"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    code, out, err = run_cli(args)
    assert code == 2, (out, err)
    assert message in err
    assert "Traceback" not in err


def test_api_key_from_the_environment_is_used_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKOMETER_API_KEY", "sk-very-secret")
    with synthetic(tok_s=500.0, ttft_s=0.005) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "5", "--prompt-tokens", "0", "--runs", "1", "--json"])
    assert code == 0, err
    assert "sk-very-secret" not in out + err
    assert json.loads(out)["config"]["authenticated"] is True
    with open_store() as store:
        dump = "\n".join(store.db.iterdump())
    assert "authenticated" in dump and "sk-very-secret" not in dump


def test_hw_without_a_model_uses_the_served_name_or_says_why_not() -> None:
    with synthetic(tok_s=500.0, ttft_s=0.005, model="not-a-catalog-model") as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "5", "--prompt-tokens", "0", "--runs", "1", "--hw", "rtx-4090", "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["prediction"] is None
    assert any("no prediction" in note and "not-a-catalog-model" in note for note in data["notes"])
    with synthetic(tok_s=500.0, ttft_s=0.005, model="llama-3.1-8b") as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "5", "--prompt-tokens", "0", "--runs", "1", "--hw", "rtx-4090", "-q", "q4_k_m", "--json"])
    assert code == 0, err
    assert json.loads(out)["prediction"]["model"] == "Llama 3.1 8B"


def test_requests_sends_n_at_every_concurrency_level_and_the_prediction_prints_once() -> None:
    """`--concurrency 4 --requests 40` sent 12 (3 rounds of 4): `--requests` now counts per level, as
    `vllm bench serve --num-prompts` does; the prediction printed twice with different values."""
    from tokometer.bench.plan import BenchConfig, level_rounds, planned_requests

    assert planned_requests(BenchConfig("http://x", concurrency=(4,), requests=40, warmup=1)) == 41
    assert level_rounds(BenchConfig("http://x", concurrency=(1, 4), requests=10), 1) == [4, 4, 2]
    assert level_rounds(BenchConfig("http://x", concurrency=(4,)), 0) == [4, 4, 4]  # --runs rounds without it
    with synthetic(tok_s=100.0, ttft_s=0.01, flavor="llamacpp") as server:
        code, out, err = run_cli(["bench", server.url, "--concurrency", "1,2", "--requests", "5", "--max-tokens", "20",
                                  "--predict-model", "llama-3.1-8b", "-q", "q4_k_m", "--hw", "rtx-4090"])
        assert code == 0, err
        assert (out + err).count("predicted for ") == 1
        code, out, err = run_cli(["bench", server.url, "--concurrency", "1,2", "--requests", "5", "--max-tokens", "20", "--json"])
    assert code == 0, err
    data = json.loads(out)
    levels = {lv["concurrency"]: lv["summary"] for lv in data["levels"]}
    assert levels[1]["requests_total"] == 5 and levels[2]["requests_total"] == 5
    assert data["requests_recorded"] == 10 + 1  # and the cold run
    # concurrency 2: two streams at 100 tok/s each decode together; the partial last round is left out
    assert levels[2]["aggregate_tps"]["n"] == 2
    assert levels[2]["aggregate_tps"]["median"] == pytest.approx(2 * levels[2]["decode_tps"]["median"], rel=0.15)
