"""A fault-injecting server on 127.0.0.1: every failure is recorded per request, the rest is kept."""

from __future__ import annotations

import json

import pytest

import tokometer.cli.bench as cli_bench
from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.bench.runner import BenchConfig, Runner
from tokometer.store import open_store

pytestmark = pytest.mark.timeout(120)


def test_each_fault_is_recorded_and_the_good_requests_are_kept() -> None:
    faults = ("", "drop", "", "http500", "", "inband-error", "", "malformed")
    with synthetic(tok_s=100.0, ttft_s=0.005, faults=faults) as server:
        result = Runner(BenchConfig(server.url, max_tokens=12, prompt_tokens=0, runs=7)).run()
    s = result.summary()
    assert result.status == "complete"
    assert (s["requests_ok"], s["requests_failed"], s["requests_total"]) == (3, 4, 7)
    assert s["errors"] == {"dropped": 1, "http": 1, "server-error": 1, "malformed": 1}
    assert s["decode_tps"]["n"] == 3 and s["decode_tps"]["median"] == pytest.approx(100.0, rel=0.2)
    failed = {r.error_kind: r for r in result.records if not r.ok}
    assert failed["http"].status_code == 500
    assert "synthetic overload" in (failed["server-error"].error or "")
    assert failed["dropped"].event_times  # tokens that arrived before the drop are kept
    stored = [r["error_kind"] for r in result.to_dict()["requests"]]
    assert stored == [None, "dropped", None, "http", None, "server-error", None, "malformed"]


def test_a_stall_past_the_timeout_fails_only_that_request() -> None:
    with synthetic(tok_s=500.0, ttft_s=0.005, faults=("", "stall", ""), stall_s=30.0) as server:
        result = Runner(BenchConfig(server.url, max_tokens=10, prompt_tokens=0, runs=3, stall_timeout_s=0.5)).run()
    s = result.summary()
    assert s["errors"] == {"stall": 1} and s["requests_ok"] == 2
    stalled = next(r for r in result.records if not r.ok)
    assert "no data from the server for 0.5 s" in (stalled.error or "")
    assert len(stalled.event_times) == 1


def test_a_total_request_timeout_bounds_a_slow_stream() -> None:
    with synthetic(tok_s=20.0, ttft_s=0.005) as server:
        result = Runner(BenchConfig(server.url, max_tokens=100, prompt_tokens=0, runs=1, warmup=0, request_timeout_s=0.5)).run()
    record = result.records[0]
    assert not record.ok and record.error_kind == "timeout"
    assert 5 <= len(record.event_times) <= 15  # about 0.5 s of a 20 tok/s stream was kept
    assert result.status == "failed"


def test_a_slow_trickle_of_bytes_still_parses() -> None:
    with synthetic(tok_s=200.0, ttft_s=0.005, faults=("trickle",)) as server:
        result = Runner(BenchConfig(server.url, protocol="openai-chat", max_tokens=8, prompt_tokens=0, runs=2)).run()
    s = result.summary()
    assert s["requests_ok"] == 2 and s["requests_failed"] == 0
    assert s["output_tokens"]["median"] == 8


def test_an_empty_stream_is_a_failure() -> None:
    with synthetic(faults=("", "empty")) as server:
        result = Runner(BenchConfig(server.url, max_tokens=5, prompt_tokens=0, runs=1)).run()
    assert result.summary()["errors"] == {"empty": 1}


def test_cli_all_failures_exit_2_with_one_line_and_keep_old_runs() -> None:
    with synthetic(tok_s=1000.0, ttft_s=0.002) as server:
        code, _, _ = run_cli(["bench", server.url, "--max-tokens", "5", "--prompt-tokens", "0", "--runs", "1"])
    assert code == 0
    with synthetic(faults=("http500",)) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "5", "--prompt-tokens", "0", "--runs", "2"])
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line]
    assert lines[-1].startswith("error: all 2 measured requests failed: HTTP 500")
    assert "Traceback" not in err + out
    with open_store() as store:
        runs = store.list_runs()
    assert [r.status for r in runs] == ["failed", "complete"]
    assert runs[0].summary.requests_failed == 2


def test_cli_ctrl_c_saves_what_was_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    def progress() -> object:
        def show(done: int, total: int | None, label: str) -> None:
            if done == 3:
                raise KeyboardInterrupt

        return show

    monkeypatch.setattr(cli_bench, "_progress", progress)
    with synthetic(tok_s=1000.0, ttft_s=0.002) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "5", "--runs", "5", "--json"])
    assert code == 130
    shown = json.loads(out)
    assert shown["status"] == "interrupted" and shown["summary"]["requests_ok"] == 2
    with open_store() as store:
        run = store.get_run(shown["id"])
    assert run.status == "interrupted" and len(run.requests) == 3


def test_cli_unreachable_server_is_one_line_and_exit_2() -> None:
    code, out, err = run_cli(["bench", "http://127.0.0.1:9", "--runs", "1"])
    assert code == 2
    assert err.strip().startswith("error: cannot reach http://127.0.0.1:9")
    assert len(err.strip().splitlines()) == 1 and not out


HOSTILE = {
    "wrong-choices": ("invalid", "`choices` is 5, expected a list"),
    "wrong-text": ("invalid", "`text` is 5, expected text"),
    "nan-count": ("invalid", "NaN, which is not a number"),
    "inf-count": ("invalid", "Infinity, which is not a number"),
    "huge-count": ("invalid", "`usage.completion_tokens` is 1e+12, outside 0..1e+09"),
    "nested": ("invalid", "nested too deeply"),
    "huge-line": ("line-too-long", "a line longer than 1,048,576 bytes"),
    "endless": ("overrun", "kept sending past max_tokens=12"),
    "html": ("html", "HTML page"),
    "redirect": ("redirect", "307 redirect to https://elsewhere.example/v1/completions"),
}


@pytest.mark.parametrize("fault", sorted(HOSTILE))
def test_a_hostile_value_fails_only_its_request_with_a_named_reason(fault: str) -> None:
    kind, words = HOSTILE[fault]
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=("", "", fault)) as server:
        result = Runner(BenchConfig(server.url, max_tokens=12, prompt_tokens=0, runs=5)).run()
    s = result.summary()
    assert result.status == "complete"
    assert s["errors"] == {kind: 2}  # the cold run is request 0; every third request is bad
    assert s["requests_ok"] == 3
    bad = next(r for r in result.records if not r.ok)
    assert words in (bad.error or ""), bad.error
    run = result.to_dict()
    with open_store() as store:
        stored = store.get_run(store.save_run(run))
    assert [r["error_kind"] for r in stored.requests] == [r.error_kind for r in result.records]


def test_a_slow_connect_past_the_stall_timeout_is_a_stall() -> None:
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=("", "slow-connect"), stall_s=5.0) as server:
        result = Runner(BenchConfig(server.url, max_tokens=5, prompt_tokens=0, runs=1, stall_timeout_s=0.3)).run()
    assert result.summary()["errors"] == {"stall": 1}


def test_the_run_deadline_stops_the_run_and_keeps_what_completed() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.002) as server:
        result = Runner(BenchConfig(server.url, max_tokens=10, prompt_tokens=0, runs=50, deadline_s=1.0)).run()
    assert result.status == "deadline"
    assert 2 <= result.summary()["requests_ok"] < 50
    assert any("deadline of 1 s" in n for n in result.notes)


def test_the_default_deadline_follows_the_plan() -> None:
    short = BenchConfig("http://x", runs=1, max_tokens=10, prompt_tokens=0)
    long = BenchConfig("http://x", runs=10, max_tokens=1000, prompt_tokens=4096)
    assert short.deadline_bound_s() < long.deadline_bound_s()
    # one decode request at its bound (60 s + 10 tokens at 2 tok/s) + the cold run + 30 s of set-up
    assert short.deadline_bound_s() == pytest.approx(65.0 + 65.0 + 30.0)
    assert BenchConfig("http://x", deadline_s=7.0).deadline_bound_s() == 7.0


@pytest.mark.parametrize("fault", sorted(HOSTILE))
def test_cli_hostile_server_ends_with_one_clean_line_and_the_run_stored(fault: str) -> None:
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=(fault,)) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "8", "--prompt-tokens", "0", "--runs", "2"])
    assert code == 2
    assert "Traceback" not in err + out
    assert err.strip().splitlines()[-1].startswith("error: all 2 measured requests failed: ")
    with open_store() as store:
        runs = store.list_runs()
        stored = store.get_run(runs[0].id)
    assert runs[0].status == "failed" and len(stored.requests) == 3


def test_cli_mixed_hostile_server_exits_0_and_stores_the_good_requests() -> None:
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=("", "wrong-choices")) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "8", "--prompt-tokens", "0", "--runs", "4", "--json"])
    assert code == 0, err
    shown = json.loads(out)
    assert shown["summary"]["errors"] == {"invalid": 2} and shown["summary"]["requests_ok"] == 2


def test_a_token_count_that_disagrees_with_the_bytes_is_flagged_not_stored_as_good() -> None:
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=("", "overcount")) as server:
        result = Runner(BenchConfig(server.url, max_tokens=12, prompt_tokens=0, runs=4)).run()
    s = result.summary()
    assert s["errors"] == {"implausible": 2} and s["requests_ok"] == 2
    bad = next(r for r in result.records if not r.ok)
    assert bad.output_tokens == 600 and "characters of text arrived" in (bad.error or "")
    assert s["decode_tps"]["max"] < 5000  # the 50x count never reaches the statistics
    from tokometer.bench.grading import grade

    codes = {f["code"]: f["severity"] for f in grade(s, None)["flags"]}
    assert codes["implausible"] == "error"


def test_cli_json_carries_the_implausible_flag() -> None:
    with synthetic(tok_s=2000.0, ttft_s=0.002, faults=("overcount",)) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "8", "--prompt-tokens", "0", "--runs", "2", "--json"])
    assert code == 2
    assert "the server counted 400 output tokens" in err.strip().splitlines()[-1]


def test_cli_deadline_is_one_line_exit_2_and_keeps_the_completed_requests() -> None:
    with synthetic(tok_s=100.0, ttft_s=0.002) as server:
        code, out, err = run_cli(["bench", server.url, "--max-tokens", "10", "--prompt-tokens", "0", "--runs", "50", "--deadline", "1", "--json"])
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: the run reached its deadline of 1 s;") and "saved" in line
    shown = json.loads(out)
    with open_store() as store:
        run = store.get_run(shown["id"])
    assert run.status == "deadline" and run.summary.requests_ok >= 2


def test_cli_stalled_server_is_bounded_by_the_stall_timeout() -> None:
    with synthetic(tok_s=500.0, ttft_s=0.002, faults=("stall",), stall_s=30.0) as server:
        code, _, err = run_cli(["bench", server.url, "--max-tokens", "10", "--prompt-tokens", "0", "--runs", "2", "--timeout", "0.5"])
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: all 2 measured requests failed: no data from the server for 0.5 s")
