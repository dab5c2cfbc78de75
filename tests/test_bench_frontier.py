"""`bench --concurrency` as frontier points (issue 29): the two axes from known timings, the predicted
overlay, the random workload's lengths, the JSON keys, the stored run, and databases from before."""

from __future__ import annotations

import functools
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

import golden
from bench_fixtures import bench_home, run_cli  # noqa: F401  (bench_home: autouse)
from tokometer.bench.client import RequestRecord
from tokometer.bench.lengths import length_range
from tokometer.bench.plan import BenchConfig
from tokometer.bench.summary import summarize_levels
from tokometer.errors import InputError
from tokometer.usecases.bench_frontier import attach_frontier, measured

URL = golden.FAKE_URL


def _request(seq: int, t0: float, first: float, step: float, n: int, prompt: int) -> RequestRecord:
    times = tuple(first + i * step for i in range(n))
    return RequestRecord(seq=seq, phase="concurrency", label="concurrency=2", ok=True, t0=t0, event_times=times,
                         t_end=times[-1], output_tokens=n, prompt_tokens=prompt)


def test_axes_from_known_timings() -> None:
    # two streams sent at 0: one token each 20 ms after a 100 ms TTFT (11 tokens), one each 50 ms after 300 ms (11 tokens)
    records = [_request(0, 0.0, 0.1, 0.02, 11, 100), _request(1, 0.0, 0.3, 0.05, 11, 300)]
    run: dict[str, Any] = {"levels": summarize_levels(records), "requests": [r.to_dict() for r in records], "config": {}}
    level = run["levels"][0]
    figures = measured(level, run["requests"], gpus=4)
    # 22 output tokens over 0 .. 0.8 s (the last token of the slow stream: 0.3 + 10 * 0.05)
    assert figures.output_tok_s == pytest.approx(22 / 0.8)
    assert figures.tok_s_per_gpu == pytest.approx(22 / 0.8 / 4)
    # per user: each request's (N - 1) / (tN - t1) = 1 / TPOT: 10 / 0.2 = 50 and 10 / 0.5 = 20; median 35
    assert figures.tok_s_per_user == pytest.approx(35.0)
    assert figures.ttft_ms == pytest.approx(200.0)  # median of 100 and 300 ms
    assert figures.total_tok_s_per_gpu == pytest.approx((22 + 400) / 0.8 / 4)
    notes: list[str] = []
    attach_frontier(run, 4, None, {}, notes)
    assert run["frontier"]["gpus"] == 4 and run["frontier"]["predicted"] is None
    assert run["levels"][0]["frontier"]["tok_s_per_gpu"] == pytest.approx(22 / 0.8 / 4)
    assert "1 / TPOT" in run["frontier"]["tok_s_per_user"]
    with pytest.raises(InputError, match="--gpus"):
        attach_frontier(run, 0, None, {}, notes)


def test_length_ranges_follow_vllm_random_dataset() -> None:
    # vLLM: [floor(L (1 - R)), ceil(L (1 + R))], output low raised to 1
    assert length_range(1000, 0.1) == length_range(1000, 0.1, at_least=1)
    r = length_range(1000, 0.25)
    assert (r.low, r.high) == (750, 1250)
    assert (length_range(3, 0.5, at_least=1).low, length_range(3, 0.5).high) == (1, 5)
    assert length_range(1, 0.9, at_least=1).low == 1
    fixed = length_range(128, 0.0)
    assert (fixed.low, fixed.high) == (128, 128)
    rng = random.Random(0)
    draws = {r.draw(rng) for _ in range(2000)}
    assert min(draws) == 750 and max(draws) == 1250  # both ends included


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": (2,), "range_ratio": 1.0, "input_len": 10}, "below 1"),
        ({"concurrency": (2,), "range_ratio": -0.1, "input_len": 10}, "below 1"),
        ({"concurrency": (2,), "range_ratio": 0.3}, "give one of them"),
        ({"concurrency": (2,), "input_len": 0}, "--input-len"),
        ({"concurrency": (2,), "output_len": 0}, "--output-len"),
        ({"input_len": 10}, "--concurrency and --rate"),
        ({"depths": (0,), "output_len": 10}, "--concurrency and --rate"),
    ],
)
def test_bad_random_workload_is_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        BenchConfig(url=URL, **options).validate()


def _recording_home(bodies: list[dict[str, Any]]) -> Any:
    """golden's fake server and clock, remembering every completion request's body."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/completions":
            bodies.append(json.loads(request.content))
        return golden._fake_server(request)

    home = golden.fake_bench_home()
    from tokometer.bench.runner import Runner
    from tokometer.usecases import benchmark as usecase

    class Wired:
        def __enter__(self) -> None:
            home.__enter__()
            original = usecase.benchmark.func  # type: ignore[attr-defined]
            fake = functools.partial(Runner, transport=httpx.MockTransport(handler), clock=golden._FakeClock())
            usecase.benchmark = functools.partial(original, runner=fake)  # type: ignore[assignment]

        def __exit__(self, *exc: object) -> None:
            home.__exit__(*exc)

    return Wired()


def test_random_workload_draws_lengths_with_the_seed() -> None:
    args = ["bench", URL, "--concurrency", "4", "--runs", "2", "--input-len", "80", "--output-len", "20", "--range-ratio", "0.5",
            "--seed", "7", "--ignore-eos", "--json", "--no-save"]
    seen: list[list[dict[str, Any]]] = []
    for _ in range(2):
        bodies: list[dict[str, Any]] = []
        with _recording_home(bodies):
            out = golden.cli_output(args)
        seen.append(bodies)
    measured_bodies = seen[0][1:]  # the first is the cold run
    outs = [b["max_tokens"] for b in measured_bodies]
    assert len(outs) == 8 and all(10 <= n <= 30 for n in outs) and len(set(outs)) > 1
    words = [len(b["prompt"].split()) for b in measured_bodies]
    assert all(35 <= w <= 125 for w in words) and len(set(words)) > 1
    assert all(b["ignore_eos"] is True and b["seed"] == 7 for b in measured_bodies)
    assert [b["max_tokens"] for b in seen[1][1:]] == outs  # the seed repeats the draws
    run = json.loads(out)
    assert run["config"]["random_workload"] == {"input_len": 80, "output_len": 20, "range_ratio": 0.5}


def test_cli_json_carries_the_frontier_and_equals_the_api() -> None:
    from tokometer.api.measure import benchmark

    args = ["--concurrency", "1,2", "--runs", "1", "--max-tokens", "5", "--gpus", "2"]
    with golden.fake_bench_home():
        shown = json.loads(golden.cli_output(["bench", URL, *args, "--json"]))
    with golden.fake_bench_home():
        api = json.loads(benchmark(URL, concurrency=(1, 2), runs=1, max_tokens=5, gpus=2).to_json())
    for run in (shown, api):
        run.pop("started_at"), run.pop("finished_at")
    assert shown == api
    assert shown["frontier"]["gpus"] == 2 and shown["frontier"]["predicted"] is None  # no --hw: measured only
    for level in shown["levels"]:
        f = level["frontier"]
        assert set(f) >= {"gpus", "output_tok_s", "tok_s_per_gpu", "tok_s_per_user", "ttft_ms", "predicted_tok_s_per_gpu"}
        assert f["tok_s_per_gpu"] == pytest.approx(level["summary"]["output_throughput_tps"] / 2)
        assert f["tok_s_per_user"] == pytest.approx(level["summary"]["decode_tps"]["median"])
        assert f["ttft_ms"] == pytest.approx(level["summary"]["ttft_ms"]["median"])
        assert f["predicted_tok_s_per_gpu"] is None


def test_overlay_with_a_model_and_hardware_is_shown_stored_and_plotted(tmp_path: Path) -> None:
    figure = tmp_path / "frontier.png"
    args = ["bench", URL, "--concurrency", "1,4", "--runs", "1", "--max-tokens", "5", "--predict-model", "llama-3.1-8b",
            "--hw", "h100-sxm", "-q", "fp8", "--engine", "vllm"]
    with golden.fake_bench_home():
        run = json.loads(golden.cli_output([*args, "--json"]))
        text = golden.cli_output([*args, "--plot", str(figure)])
        stored = json.loads(golden.cli_output(["runs", "show", "1", "--json"]))
    guide = run["frontier"]["predicted"]
    assert guide["hardware"] == "h100-sxm" and guide["engine"] == "vllm" and guide["layout"] == "tp1"
    by_c = {p["concurrency"]: p for p in guide["points"]}
    assert {1, 4, 1024} <= set(by_c) and any(p["on_frontier"] for p in guide["points"])
    for level in run["levels"]:
        f, point = level["frontier"], by_c[level["concurrency"]]
        assert f["predicted_tok_s_per_gpu"] == pytest.approx(point["tok_s_per_gpu"]) and f["predicted_tok_s_per_gpu"] > 0
        assert f["predicted_tok_s_per_user"] == pytest.approx(point["tok_s_per_user"])
    # the simulated throughput per GPU grows with users, the per-user speed falls
    assert by_c[4]["tok_s_per_gpu"] > by_c[1]["tok_s_per_gpu"] and by_c[4]["tok_s_per_user"] < by_c[1]["tok_s_per_user"]
    assert "predicted tok/s/GPU" in text and "predicted frontier:" in text and "wrote the frontier figure" in text
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert stored["frontier"] == run["frontier"]
    assert [lv["frontier"] for lv in stored["levels"]] == [lv["frontier"] for lv in run["levels"]]


def test_plot_and_gpus_are_checked_before_measuring(tmp_path: Path) -> None:
    code, _, err = run_cli(["bench", URL, "--concurrency", "2", "--plot", str(tmp_path / "f.gif")])
    assert code == 2 and "--plot" in err and "Traceback" not in err
    code, _, err = run_cli(["bench", URL, "--runs", "1", "--plot", str(tmp_path / "f.png")])
    assert code == 2 and "--concurrency" in err
    code, _, err = run_cli(["bench", URL, "--concurrency", "2", "--gpus", "0"])
    assert code == 2 and "--gpus" in err
    code, _, err = run_cli(["bench", URL, "--concurrency", "2", "--input-len", "10", "--range-ratio", "1.5"])
    assert code == 2 and "--range-ratio" in err


def test_a_database_from_before_the_frontier_opens(tmp_path: Path) -> None:
    from tokometer.store import open_store
    from tokometer.store.migrations import m001_runs_and_requests, m002_run_indexes

    path = tmp_path / "runs.db"
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for fn in (m001_runs_and_requests, m002_run_indexes):
        fn(db)
        db.execute("INSERT INTO _migrations VALUES (?, ?)", (fn.__name__, "2026-01-01T00:00:00+00:00"))
    level = {"label": "concurrency=2", "concurrency": 2, "summary": {"requests_ok": 2}}
    db.execute(
        "INSERT INTO runs (started_at, status, source, mode, config_json, summary_json, levels_json, notes_json) "
        "VALUES ('2026-01-01T00:00:00+00:00', 'complete', 'tokometer', 'concurrency', '{}', '{\"requests_ok\": 2}', ?, '[]')",
        (json.dumps([level]),),
    )
    db.close()
    with open_store(path) as store:
        old = store.get_run(1)
        assert old.frontier is None and old.levels[0].frontier is None and old.levels[0].kind == "concurrency"
        assert "frontier" not in old.to_dict(stored=True)
        assert [r.id for r in store.list_runs()] == [1]
        newer = old.with_(id=None, frontier={"gpus": 8, "predicted": None})
        new_id = store.save_run(newer)
        assert store.get_run(new_id).frontier == {"gpus": 8, "predicted": None}


def test_rate_runs_take_the_random_workload_too() -> None:
    bodies: list[dict[str, Any]] = []
    with _recording_home(bodies):
        out = golden.cli_output(["bench", URL, "--rate", "200", "--requests", "6", "--output-len", "8", "--range-ratio", "0.5",
                                 "--seed", "3", "--json", "--no-save"])
    outs = [b["max_tokens"] for b in bodies[1:]]
    assert len(outs) == 6 and all(4 <= n <= 12 for n in outs) and len(set(outs)) > 1
    # without --input-len the short fixed prompt stays
    assert len({len(b["prompt"].split()) for b in bodies[1:]}) == 1
    run = json.loads(out)
    assert run["config"]["random_workload"]["output_len"] == 8 and "frontier" not in run


def test_a_real_server_at_known_speeds_gives_the_axes() -> None:
    """A synthetic server on a socket: every stream at 100 tok/s after 100 ms, whatever the concurrency."""
    from bench_fixtures import synthetic

    with synthetic(tok_s=100.0, ttft_s=0.1, flavor="vllm") as server:
        code, out, err = run_cli(["bench", server.url, "--concurrency", "1,4", "--runs", "2", "--warmup", "0", "--max-tokens", "21",
                                  "--ignore-eos", "--gpus", "2", "--json", "--no-save"])
    assert code == 0, err
    levels = {lv["concurrency"]: lv["frontier"] for lv in json.loads(out)["levels"]}
    for c, f in levels.items():
        assert f["tok_s_per_user"] == pytest.approx(100.0, rel=0.15)  # 20 gaps of 10 ms
        assert f["ttft_ms"] == pytest.approx(100.0, rel=0.3)
        # c streams of 21 tokens each 0.1 + 0.2 s, two rounds back to back, over 2 GPUs
        assert f["tok_s_per_gpu"] == pytest.approx(c * 21 / 0.3 / 2, rel=0.3)
    assert levels[4]["tok_s_per_gpu"] > 3 * levels[1]["tok_s_per_gpu"]


def test_the_prediction_runs_tp_over_the_servers_gpus() -> None:
    args = ["bench", URL, "--concurrency", "2", "--runs", "1", "--max-tokens", "5", "--predict-model", "llama-3.1-8b",
            "--hw", "h100-sxm", "--gpus", "2", "--json", "--no-save"]
    with golden.fake_bench_home():
        run = json.loads(golden.cli_output(args))
    guide = run["frontier"]["predicted"]
    assert guide["layout"] == "tp2" and guide["gpus"] == 2
    assert "tp=2" in run["levels"][0]["simulation"]["deployment"]
    point = next(p for p in guide["points"] if p["concurrency"] == 2)
    assert run["levels"][0]["frontier"]["predicted_tok_s_per_gpu"] == pytest.approx(point["tok_s_per_gpu"])


def test_a_model_that_does_not_fit_leaves_a_note_not_a_crash() -> None:
    args = ["bench", URL, "--concurrency", "2", "--runs", "1", "--max-tokens", "5", "--predict-model", "llama-3.1-70b",
            "--hw", "rtx-4090", "-q", "fp16", "--json", "--no-save"]
    with golden.fake_bench_home():
        run = json.loads(golden.cli_output(args))
    assert run["frontier"]["predicted"] is None
    assert any(note.startswith("no predicted frontier:") for note in run["notes"])
    assert run["levels"][0]["frontier"]["tok_s_per_user"] is not None  # the measured side stays
