"""Trace replay: the Azure CSV and JSON Lines readers, and a replay that keeps lengths and arrivals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.bench.trace import TraceRequest, parse_trace
from tokometer.errors import InputError

AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:46.1805900,879,2
"""


def test_azure_csv_is_sorted_and_relative_to_the_first_arrival() -> None:
    trace = parse_trace(AZURE, "azure.csv")
    assert trace == (
        TraceRequest(0.0, 879, 2),
        TraceRequest(0.5, 374, 44),
        TraceRequest(pytest.approx(4.814579), 396, 109),  # type: ignore[arg-type]
    )


def test_generic_jsonl_and_csv_read_the_same() -> None:
    rows = [{"arrival_s": 1.5, "prompt_tokens": 10, "output_tokens": 5}, {"timestamp": 1.0, "input_length": 20, "output_length": 7}]
    from_jsonl = parse_trace("\n".join(json.dumps(r) for r in rows))
    from_csv = parse_trace("arrival_s,prompt_tokens,output_tokens\n1.5,10,5\n1.0,20,7\n")
    assert from_jsonl == from_csv == (TraceRequest(0.0, 20, 7), TraceRequest(0.5, 10, 5))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("arrival_s,prompt_tokens,output_tokens\n", "no requests"),
        ("a,b\n1,2\n", "line 2: no arrival time column"),
        ("arrival_s,prompt_tokens,output_tokens\n0,-3,5\n", "prompt length '-3' must be a whole number"),
        ("arrival_s,prompt_tokens,output_tokens\n0,3,0\n", "output length '0' must be a whole number from 1"),
        ("arrival_s,prompt_tokens,output_tokens\nnan,3,4\n", "not finite"),
        ("arrival_s,prompt_tokens,output_tokens\nyesterday,3,4\n", "neither seconds nor a date-time"),
        ('{"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 2}\n{"arrival_s": 0\n', "line 2: not JSON"),
    ],
)
def test_a_bad_trace_names_its_line(text: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        parse_trace(text, "t.csv")


def test_replay_keeps_each_requests_lengths_and_arrival_times() -> None:
    trace = (TraceRequest(0.0, 20, 5), TraceRequest(0.3, 200, 9), TraceRequest(0.6, 20, 3))
    with synthetic(tok_s=500.0, ttft_s=0.005) as server:
        result = Runner(BenchConfig(server.url, trace=trace, warmup=0)).run()
    assert result.config.mode == "trace" and result.status == "complete"
    measured = sorted((r for r in result.records if r.phase == "trace"), key=lambda r: r.t0)
    assert [r.max_tokens for r in measured] == [5, 9, 3]
    assert [r.output_tokens for r in measured] == [5, 9, 3]
    starts = [r.t0 - measured[0].t0 for r in measured]
    assert starts == pytest.approx([0.0, 0.3, 0.6], abs=0.03)
    assert measured[1].prompt_tokens is not None and measured[1].prompt_tokens > 3 * (measured[0].prompt_tokens or 0)
    assert result.to_dict()["config"]["trace"] == {"file": None, "requests": 3, "span_s": 0.6}


def test_cli_trace_replays_a_file_and_refuses_a_bad_one(tmp_path: Path) -> None:
    path = tmp_path / "azure.csv"
    path.write_text(AZURE.replace("18:15:50.9951690", "18:15:47.0000000"))
    with synthetic(tok_s=2000.0, ttft_s=0.002) as server:
        code, out, err = run_cli(["bench", server.url, "--trace", str(path), "--json"])
        assert code == 0, err
        shown = json.loads(out)
        assert shown["mode"] == "trace" and shown["summary"]["requests_ok"] == 3
        assert shown["config"]["trace"]["file"] == "azure.csv"
        bad = tmp_path / "bad.csv"
        bad.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\nnow,1,1\n")
        code, out, err = run_cli(["bench", server.url, "--trace", str(bad)])
    assert code == 2 and err.startswith("error: bad.csv line 2: arrival time 'now'") and not out
