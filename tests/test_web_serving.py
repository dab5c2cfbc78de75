"""The Serving page's API: `/api/simulate` gives the numbers `tokometer simulate --json` gives for the
same inputs, marks the knee, bounds its work, and answers bad input with a 422 naming the field;
`/api/plan` gives `tokometer plan --json`'s configurations."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tokometer.cli import main
from tokometer.usecases.serving_curve import MAX_RATES, MAX_REQUESTS
from tokometer.web.app import create_app
from web_helpers import FakeStore

SETUP = {"model": "llama-3.1-8b", "hw": "h100-sxm", "quant": "bf16", "prompt_tokens": 500, "output_tokens": 100,
         "num_requests": 200}
CLI = ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "-q", "bf16", "--prompt", "500", "--output", "100", "-n", "200"]
SAME = ("requests", "completed", "req_per_s", "tput_out_tok_s", "ttft_s", "tpot_s", "e2e_s", "queue_s",
        "mean_kv_utilisation", "preemptions", "steps", "goodput_share")


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    try:
        main([*CLI, *args, "--json"])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_the_chosen_rate_is_what_the_cli_simulates(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    body = {**SETUP, "rate_per_s": 6, "rates_per_s": [2, 6, 12], "slo_ttft_ms": 300, "slo_tpot_ms": 40}
    web = client.post("/api/simulate", json=body).json()
    cli = cli_json(capsys, "--rate", "6", "--slo-ttft", "300", "--slo-tpot", "40")
    assert web["deployment"]["kv_capacity_tokens"] == cli["deployment"]["kv_capacity_tokens"]
    for key in SAME:
        assert web["chosen"][key] == cli["result"][key], key
    assert web["chosen"]["binding"] == cli["binding"]
    shares = web["chosen"]["time_shares"]
    assert shares["prefill"] + shares["decode"] == pytest.approx(1.0)


def test_the_curve_is_the_cli_sweep_with_its_knee(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    rates = [2.0, 6.0, 12.0, 30.0, 60.0]
    web = client.get("/api/simulate", params={**SETUP, "rates_per_s": ",".join(map(str, rates))}).json()
    cli = cli_json(capsys, "--rate", ",".join(map(str, rates)))
    assert [p["rate_per_s"] for p in web["points"]] == rates
    for ours, theirs in zip(web["points"], cli["points"], strict=True):
        for key in SAME:
            assert ours[key] == theirs[key], key
        assert "batch_over_time" not in ours  # the page draws none of the over-time series
    assert web["knee_rate_per_s"] == cli["knee_rate_per_s"]
    # with no rate, the chosen point is the knee
    assert web["chosen"]["rate_per_s"] == web["knee_rate_per_s"]


def test_without_rates_the_sweep_spans_saturation(client: TestClient) -> None:
    data = client.post("/api/simulate", json=SETUP).json()
    points = data["points"]
    assert len(points) == 8
    served = [p["req_per_s"] / p["rate_per_s"] for p in points]
    assert served[0] > 0.9 and served[-1] < 0.95  # light load is served, 120 % of saturation is not


def test_a_closed_loop_point_for_concurrency_runs(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    web = client.post("/api/simulate", json={**SETUP, "concurrency": 16, "rates_per_s": [4]}).json()
    cli = cli_json(capsys, "--concurrency", "16")
    assert web["chosen"]["concurrency"] == 16 and web["chosen"]["rate_per_s"] is None
    for key in SAME:
        assert web["chosen"][key] == cli["result"][key], key


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_requests": MAX_REQUESTS + 1}, "num_requests"),
        ({"rate_per_s": -1}, "rate_per_s"),
        ({"rate_per_s": "fast"}, "rate_per_s"),
        ({"rates_per_s": list(range(1, MAX_RATES + 2))}, "rates_per_s"),
        ({"prompt_tokens": 0}, "prompt_tokens"),
        ({"replicas": 0}, "replicas"),
        ({"slo_ttft_ms": 0}, "slo_ttft_ms"),
        ({"hw": "no-such-gpu"}, "hw"),
        ({"model": "/etc/passwd"}, "model"),
        ({"rate_per_s": 2, "concurrency": 4}, "concurrency"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    response = client.post("/api/simulate", json={**SETUP, **change})
    assert response.status_code == 422
    body = response.json()
    assert body["field"] == field and body["error"]


def test_a_model_that_does_not_fit_says_which_tp_would(client: TestClient) -> None:
    response = client.post("/api/simulate", json={"model": "llama-3.1-70b", "hw": "l4", "num_requests": 50})
    assert response.status_code == 422
    assert "smallest setup that fits" in response.json()["error"]


def test_the_plan_is_the_cli_plan(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    body = {"model": "llama-3.1-8b", "rate_per_s": 5, "prompt_tokens": 500, "output_tokens": 100, "slo_ttft_ms": 500,
            "slo_tpot_ms": 50, "hw": "h100-sxm,l40s", "quant": ["bf16", "fp8"], "top": 3}
    web = client.post("/api/plan", json=body).json()
    try:
        main(["plan", "llama-3.1-8b", "--rate", "5", "--prompt", "500", "--output", "100", "--slo-ttft-p99", "500",
              "--slo-tpot-p99", "50", "--hw", "h100-sxm,l40s", "-q", "bf16,fp8", "--top", "3", "--json"])
    except SystemExit as exc:
        assert not exc.code
    cli = json.loads(capsys.readouterr().out)
    assert web["configs"] and web["configs"] == cli["configs"]
    costs = [c["usd_per_hour"] for c in web["configs"]]
    assert costs == sorted(costs)
    assert all(c["ttft_p99_s"] <= 0.5 and c["tpot_p99_s"] <= 0.05 for c in web["configs"])


def test_a_plan_nobody_meets_is_an_answer_with_the_best_p99(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "rate_per_s": 5, "slo_ttft_ms": 0.01, "slo_tpot_ms": 0.01, "hw": "l4"}
    data = client.post("/api/plan", json=body).json()
    assert data["configs"] == [] and data["best_ttft_p99_s"] > 0.01e-3


@pytest.mark.parametrize(
    ("change", "field"),
    [({"rate_per_s": None}, "rate_per_s"), ({"slo_tpot_ms": None}, "slo_tpot_ms"), ({"top": 50}, "top"),
     ({"hw": ",".join(["h100-sxm"] * 13)}, "hw"), ({"rate_per_s": 0}, "rate_per_s")],
)
def test_bad_plan_input_is_a_422_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    body = {"model": "llama-3.1-8b", "rate_per_s": 5, "slo_ttft_ms": 500, "slo_tpot_ms": 50, **change}
    response = client.post("/api/plan", json=body)
    assert response.status_code == 422 and response.json()["field"] == field


def level(kind: str, value: float, *, tput: float, ttft_p99: float, tpot_p99: float) -> dict[str, Any]:
    return {"label": f"{kind}={value:g}", kind: value, "summary": {
        "requests_ok": 100, "requests_total": 100, "prompt_tokens": 500, "output_tokens": {"median": 100},
        "output_throughput_tps": tput, "request_throughput_rps": tput / 100,
        "ttft_ms": {"p99": ttft_p99}, "tpot_ms": {"p99": tpot_p99}}}


OVERLAY_RUNS: list[dict[str, Any]] = [
    {"id": 21, "started_at": "2026-11-30T10:00:00+00:00", "mode": "rate", "model": "served-name", "hardware": None,
     "config": {"requests": 100, "max_tokens": 100},
     "prediction": {"model": "Llama 3.1 8B", "hardware": "h100-sxm", "quant": "bf16", "engine": "vllm"},
     "levels": [level("rate", 2, tput=200, ttft_p99=60, tpot_p99=12), level("rate", 8, tput=790, ttft_p99=90, tpot_p99=16)]},
    {"id": 22, "started_at": "2026-11-30T11:00:00+00:00", "mode": "concurrency", "model": "llama-3.1-8b",
     "hardware": "h100-sxm", "config": {}, "prediction": {"engine": "ollama"},
     "levels": [level("concurrency", 4, tput=300, ttft_p99=70, tpot_p99=11),
                level("concurrency", 16, tput=1100, ttft_p99=120, tpot_p99=15)]},
    {"id": 23, "started_at": "2026-11-30T12:00:00+00:00", "mode": "speed", "model": "llama-3.1-8b", "hardware": "h100-sxm"},
]


class OverlayStore(FakeStore):
    """A run store holding a rate run, a concurrency run and a speed run (the runs page's overlay)."""

    def list_runs(self, limit: int = 50, *, model: str | None = None, offset: int = 0) -> list[Any]:
        from tokometer.domain.runrecord import ListedRun

        return [ListedRun.from_dict({"source": "tokometer", **run}) for run in OVERLAY_RUNS[:limit]]

    def get_run(self, run_id: int, **kwargs: Any) -> Any:
        from tokometer.domain.runrecord import RunRecord

        found = next((r for r in OVERLAY_RUNS if r["id"] == run_id), None)
        if found is None:
            raise LookupError(run_id)
        return RunRecord.from_dict({"source": "tokometer", **found})

    def count_requests(self, run_id: int) -> int:
        return 0


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    module = types.ModuleType("tokometer.store")
    module.open_store = lambda path=None: OverlayStore()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tokometer.store", module)


def test_a_rate_run_is_overlaid_on_the_curve_at_its_own_rates(client: TestClient, store: None, capsys: pytest.CaptureFixture[str]) -> None:
    data = client.get("/api/runs/21/serving").json()
    sim = data["simulated"]
    assert sim["deployment"]["hardware"] == "h100-sxm" and sim["deployment"]["model"] == "Llama 3.1 8B"  # from the prediction
    assert [p["rate_per_s"] for p in sim["points"]] == [2.0, 8.0]
    assert [m["tput_out_tok_s"] for m in data["measured"]] == [200, 790]
    assert data["measured"][1]["ttft_p99_ms"] == 90
    # the CLI for the same workload: 500-in/100-out as measured, 100 requests as the run asked (click keeps the last -n)
    cli = cli_json(capsys, "--rate", "2,8", "-n", "100")
    for ours, theirs in zip(sim["points"], cli["points"], strict=True):
        assert ours["tput_out_tok_s"] == theirs["tput_out_tok_s"] and ours["ttft_s"] == theirs["ttft_s"]


def test_a_concurrency_run_gets_closed_loops_and_a_note_for_an_unknown_engine(client: TestClient, store: None) -> None:
    data = client.get("/api/runs/22/serving").json()
    loops = data["simulated"]["closed_loops"]
    assert [c["concurrency"] for c in loops] == [4, 16]
    assert loops[1]["tput_out_tok_s"] > loops[0]["tput_out_tok_s"]  # more users, more throughput below saturation
    assert data["notes"] and "ollama" in data["notes"][0]


def test_runs_that_cannot_be_overlaid_say_why(client: TestClient, store: None) -> None:
    speed = client.get("/api/runs/23/serving")
    assert speed.status_code == 422 and "only `bench --rate`" in speed.json()["error"]
    assert client.get("/api/runs/99/serving").status_code == 404


# --- the frontier -----------------------------------------------------------------------------------

FRONTIER = {"model": "llama-3.1-8b", "hw": "h100-sxm", "quant": "bf16", "prompt_tokens": 500, "output_tokens": 100,
            "concurrencies": [1, 8, 64]}


def test_the_frontier_is_the_cli_frontier(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    data = client.post("/api/frontier", json=FRONTIER).json()
    try:
        main(["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "-q", "bf16", "--prompt", "500", "--output", "100", "--frontier",
              "--concurrencies", "1,8,64", "--json"])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    cli = json.loads(capsys.readouterr().out)
    assert {k: data[k] for k in cli} == cli
    assert data["prompt_tokens"] == 500 and data["output_tokens"] == 100 and data["concurrencies"] == [1, 8, 64]
    assert {p["concurrency"] for p in data["points"]} == {1, 8, 64} and {p["gpus"] for p in data["points"]} >= {1, 8}
    front = data["frontier"]
    assert front and all(p["on_frontier"] for p in front) and all(p["ttft_p99_s"] > 0 for p in front)
    users = [p["tok_s_per_user"] for p in front]
    gpus = [p["tok_s_per_gpu"] for p in front]
    assert users == sorted(users, reverse=True) and gpus == sorted(gpus)  # less speed per user buys more per GPU
    # the CLI's names work too, and a GET with a query string answers the same
    same = client.get("/api/frontier", params={"model": "llama-3.1-8b", "hw": "h100-sxm", "q": "bf16", "prompt": "500",
                                               "output": "100", "concurrencies": "64,1,8"}).json()
    assert same == data


def test_the_frontier_with_speculation_is_the_cli_frontier(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    body = {**FRONTIER, "concurrencies": [1, 8], "spec_method": "eagle3", "spec_tokens": 2}
    data = client.post("/api/frontier", json=body).json()
    try:
        main(["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "-q", "bf16", "--prompt", "500", "--output", "100", "--frontier",
              "--concurrencies", "1,8", "--spec-method", "eagle3", "--spec-tokens", "2", "--json"])
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    cli = json.loads(capsys.readouterr().out)
    assert {k: data[k] for k in cli} == cli
    assert {p["spec"] for p in data["points"]} == {None, "eagle3 k=2 a=0.65"}


def test_the_frontier_defaults_to_five_user_counts(client: TestClient) -> None:
    data = client.post("/api/frontier", json={"model": "llama-3.1-8b", "hw": "l40s", "output_tokens": 50}).json()
    assert data["concurrencies"] == [1, 4, 16, 64, 256] and {p["concurrency"] for p in data["points"]} == {1, 4, 16, 64, 256}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"concurrencies": [0, 4]}, "concurrencies"),
        ({"concurrencies": [2048]}, "concurrencies"),
        ({"concurrencies": list(range(1, 10))}, "concurrencies"),
        ({"hw": "h100-sxm,l4"}, "hw"),
        ({"output_tokens": 100_000}, "output_tokens"),
        ({"model": "no-such-model"}, "model"),
        ({"rate_per_s": 4}, "rate_per_s"),
        ({"spec_method": "medusa"}, "spec_method"),
        ({"spec_tokens": 3}, "spec_method"),
    ],
)
def test_bad_frontier_input_is_a_422_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    answer = client.post("/api/frontier", json={**FRONTIER, **change})
    assert answer.status_code == 422 and answer.json().get("field") == field, answer.json()


def test_the_serving_page_asks_for_the_frontier() -> None:
    """Without a browser: the page's script posts the form's deployment to /api/frontier and draws its
    two axes, and both languages say what they are."""
    from tokometer.web.app import STATIC_DIR

    script = (STATIC_DIR / "js" / "pages" / "serving.js").read_text(encoding="utf-8")
    assert "post('/api/frontier'" in script and "tok_s_per_user" in script and "tok_s_per_gpu" in script
    en, fr = (json.loads((STATIC_DIR / "i18n" / f"{lang}.json").read_text(encoding="utf-8")) for lang in ("en", "fr"))
    keys = {k for k in en if k.startswith("serve.frontier.")}
    assert len(keys) >= 10 and keys <= set(fr)
    assert "per GPU" in en["serve.frontier.yLabel"] and "par GPU" in fr["serve.frontier.yLabel"]
    assert all(en[k] != fr[k] for k in keys if k != "serve.frontier.col.gpus")
