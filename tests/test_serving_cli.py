"""`tokometer simulate` and `tokometer plan` as a user types them: reports, JSON, and bad input as one
line with exit code 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.helpers import cli

SIM = ["simulate", "llama-3.1-8b", "--hw", "h100-sxm", "-q", "bf16"]


def one_line_error(capsys: pytest.CaptureFixture[str], *args: str, match: str) -> None:
    code, out, err = cli(capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert match in lines[0], lines[0]


def test_simulate_reports_throughput_latency_and_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, *SIM, "--rate", "8", "-n", "300", "--slo-ttft", "500", "--slo-tpot", "50")
    assert code == 0
    assert "req/s" in out and "time to first token" in out and "why: engine steps were bound by" in out
    assert "goodput:" in out


def test_simulate_json_is_deterministic_under_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [json.loads(cli(capsys, *SIM, "--concurrency", "16", "-n", "200", "--prompt", "lognormal:800:0.5",
                           "--seed", "4", "--json")[1]) for _ in range(2)]
    assert runs[0] == runs[1]
    r = runs[0]["result"]
    assert r["completed"] == 200 and r["ttft_s"]["p99"] >= r["ttft_s"]["p50"] > 0
    assert set(r["bound_s"]) == {"memory", "compute", "overhead"}


def test_rate_list_draws_the_curve_and_finds_a_knee(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, *SIM, "--rate", "2,10,40", "-n", "400", "--json")
    data = json.loads(out)
    assert code == 0 and [p["rate_per_s"] for p in data["points"]] == [2, 10, 40]
    p99 = [p["ttft_s"]["p99"] for p in data["points"]]
    assert p99[0] < p99[2]
    assert data["knee_rate_per_s"] in (2, 10)


def test_trace_replay_azure_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "azure.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n"
                     "2023-11-16 18:15:51.2000000,879,55\n", encoding="utf-8")
    code, out, _ = cli(capsys, *SIM, "--trace", str(trace), "--json")
    assert code == 0
    assert json.loads(out)["result"]["completed"] == 3


@pytest.mark.parametrize("rate", ["0", "-3", "nan", "abc", "inf"])
def test_bad_rate(capsys: pytest.CaptureFixture[str], rate: str) -> None:
    one_line_error(capsys, *SIM, "--rate", rate, match="--rate")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("arrival_s,prompt_tokens,output_tokens\n0,10,10\n-1,10,10\n", "arrival time"),
        ("arrival_s,prompt_tokens,output_tokens\n2,10,10\n1,10,10\n", "before the previous"),
        ("arrival_s,prompt_tokens,output_tokens\n0,ten,10\n", "not a number of tokens"),
        ("when,prompt_tokens,output_tokens\n0,10,10\n", "no arrival time column"),
    ],
)
def test_bad_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, match: str) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(body, encoding="utf-8")
    one_line_error(capsys, *SIM, "--trace", str(trace), match=match)


def test_requests_beyond_the_context_are_rejected_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival_s": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
                     '{"arrival_s": 0.1, "prompt_tokens": 200000, "output_tokens": 10}\n', encoding="utf-8")
    code, out, _ = cli(capsys, *SIM, "--trace", str(trace), "--json")
    r = json.loads(out)["result"]
    assert code == 0 and (r["completed"], r["rejected"]) == (1, 1)


def test_model_that_does_not_fit_names_the_smallest_tp(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, "simulate", "llama-3.1-70b", "--hw", "h100-sxm", "-q", "bf16", "--rate", "1",
                   match="smallest setup that fits is --tp 4")  # 141 GB of weights: 2 x 80 GB x 0.9 leaves no KV


def test_model_that_fits_nowhere_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, "simulate", "llama-3.1-405b", "--hw", "l4", "-q", "bf16", "--rate", "1",
                   match="does not fit at any TP")


def test_a_billion_requests_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, *SIM, "--rate", "5", "-n", "1000000000", match="more than the simulator takes")


def test_bad_lengths(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, *SIM, "--rate", "5", "--prompt", "gauss:3", match="bad length distribution")


def test_two_workloads_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, *SIM, "--rate", "5", "--offline", "10", match="exactly one workload")


def test_plan_prints_cheapest_configs_that_were_simulated(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "plan", "llama-3.1-8b", "--rate", "20", "--prompt", "1000", "--output", "200",
                       "--slo-ttft-p99", "1000", "--slo-tpot-p99", "60", "--hw", "h100-sxm,l40s,a100-80gb-sxm",
                       "-q", "bf16,fp8", "--json")
    data = json.loads(out)
    assert code == 0 and data["configs"]
    costs = [c["usd_per_hour"] for c in data["configs"]]
    assert costs == sorted(costs)
    for c in data["configs"]:
        assert c["ttft_p99_s"] <= 1.0 and c["tpot_p99_s"] <= 0.06
        assert c["usd_per_million_output_tokens"] == pytest.approx(c["usd_per_hour"] / (20 * 200 * 3600) * 1e6)


def test_plan_price_override_changes_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "2000", "--slo-tpot-p99", "100",
            "--hw", "h100-sxm", "-q", "bf16", "--json"]
    base = json.loads(cli(capsys, *args)[1])["configs"][0]
    cheap = json.loads(cli(capsys, *args, "--price", "h100-sxm=1.0")[1])["configs"][0]
    assert cheap["usd_per_hour"] == pytest.approx(base["usd_per_hour"] / 2.99)


def test_unmeetable_slo_says_so_with_the_best_p99(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, "plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "0.01", "--slo-tpot-p99", "0.01",
                   "--hw", "h100-sxm", "-q", "bf16", match="the best achievable is p99 TTFT")


def test_bad_price(capsys: pytest.CaptureFixture[str]) -> None:
    one_line_error(capsys, "plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "500", "--slo-tpot-p99", "50",
                   "--price", "h100-sxm=cheap", match="--price")


def test_estimate_batch_says_its_aggregate_is_one_decode_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "estimate", "llama-2-7b", "--hw", "a100-80gb-sxm", "-q", "fp16", "-e", "tensorrt-llm",
                       "--batch", "384", "--prompt", "128", "--output", "128", "--json")
    decode = json.loads(out)["decode"]
    assert code == 0 and "one decode step" in decode["aggregate_basis"]
    assert decode["aggregate_tok_s"] == pytest.approx(decode["estimate_tok_s"] * 384)


def test_a_sweep_with_objectives_is_rounded_headed_and_shows_goodput(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: rates printed as 2.333, 9.666, 16.999, a last column with no header, and no goodput
    although --slo-ttft and --slo-tpot were given."""
    code, out, err = cli(capsys, *SIM, "--sweep-rate", "-n", "300", "--slo-ttft", "500", "--slo-tpot", "50")
    assert code == 0, err
    lines = out.splitlines()
    header, rule = lines[1], lines[2]
    columns = [len(cell) for cell in rule.split("  ") if cell]
    assert len(re.split(r"\s{2,}", header.strip())) == len(columns)  # every column has a heading
    assert "goodput req/s" in header and "knee" in header and "TTFT p99 ms" in header
    rows = lines[3:3 + 8]
    offered = [row.split()[0] for row in rows]
    assert all(re.fullmatch(r"\d+(\.\d{1,2})?", rate) and len(rate.replace(".", "").lstrip("0")) <= 3 for rate in offered), offered
    assert any(line.startswith("goodput: at most ") and "TTFT <= 500 ms and TPOT <= 50 ms" in line for line in lines)
    code, out, err = cli(capsys, *SIM, "--sweep-rate", "-n", "300", "--json")
    rates = [p["rate_per_s"] for p in json.loads(out)["points"]]
    assert all(float(f"{r:.2g}") == r for r in rates) and rates == sorted(rates)


def test_the_rate_list_plot_has_a_title_a_knee_mark_and_says_where_it_went(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    figures = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (figures.append(fig), close(fig)))
    target = tmp_path / "curve.png"
    code, out, err = cli(capsys, *SIM, "--rate", "2,10,40", "-n", "300", "--slo-ttft", "500", "--plot", str(target))
    assert code == 0, err
    assert target.is_file() and f"plot written to {target.resolve()}" in err
    (ax, *_) = figures[-1].axes
    assert "Llama 3.1 8B" in ax.get_title()
    knee = re.search(r"knee: (\S+) req/s", out)
    labels = [text.get_text() for text in ax.get_legend().get_texts()]
    assert knee and f"knee: {knee.group(1)} req/s" in labels and "TTFT SLO" in labels
