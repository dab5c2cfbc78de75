"""`plan --spec-method`: every candidate deployed with speculative decoding (its drafter's memory, the
verify pass over B*(k+1) tokens, E(a, k) tokens a pass), and `--spec auto`, which keeps speculation
where a tight TPOT objective needs it and leaves it out where a high rate fills the batch; the rows
say which, and `--emit` starts them with the engine's speculative options (usecases/plan.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.helpers import cli

from tokometer.usecases.plan import bounds
from tokometer.usecases.simulate import deploy

BASE = ("plan", "llama-3.1-8b", "--prompt", "200", "--output", "400", "--slo-ttft-p99", "3000", "--hw", "h100-sxm",
        "-q", "bf16", "--top", "2", "--no-disagg", "--json")
TIGHT = ("--rate", "2", "--slo-tpot-p99", "7")  # one plain request on one H100 decodes at about 8 ms a token
BUSY = ("--rate", "300", "--slo-tpot-p99", "150")  # full batches: n-gram's verify pass costs more than it keeps


def plan_rows(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    code, out, err = cli(capsys, *BASE, *args)
    assert code == 0, err
    return json.loads(out)["configs"]  # type: ignore[no-any-return]


def test_the_bounds_charge_the_verify_pass_and_the_tokens_it_keeps() -> None:
    plain = bounds(deploy("llama-3.1-8b", "h100-sxm", quant="bf16"), 200, 400, 0.15)
    ngram = bounds(deploy("llama-3.1-8b", "h100-sxm", quant="bf16", spec_method="ngram"), 200, 400, 0.15)
    assert ngram.tpot_floor_s < plain.tpot_floor_s  # alone, a pass of 4 tokens costs about one step and keeps 1.4
    assert ngram.step_s > plain.step_s  # at a full batch the pass over 4x the tokens is compute-bound


def test_a_speculating_plan_says_so_in_every_row_and_its_launch(capsys: pytest.CaptureFixture[str]) -> None:
    rows = plan_rows(capsys, *TIGHT, "--spec-method", "eagle3", "--spec-tokens", "4", "--emit", "vllm")
    assert rows
    for row in rows:
        assert row["spec"]["method"] == "eagle3" and row["spec"]["draft_tokens"] == 4 and row["spec"]["tokens_per_pass"] > 1
        assert "eagle3 k4" in row["layout"] and row["tpot_p99_s"] <= 0.007
        command = row["launch"]["commands"][0]["command"]
        assert '--speculative-config \'{"method":"eagle3","num_speculative_tokens":4' in command


def test_auto_speculates_where_a_tight_tpot_needs_it(capsys: pytest.CaptureFixture[str]) -> None:
    plain = plan_rows(capsys, *TIGHT)
    auto = plan_rows(capsys, *TIGHT, "--spec-method", "ngram", "--spec", "auto")
    assert all("spec" not in r for r in plain)
    assert auto[0]["spec"]["method"] == "ngram" and auto[0]["tpot_p99_s"] <= 0.007
    assert auto[0]["usd_per_hour"] < plain[0]["usd_per_hour"]  # one GPU speculating instead of a wider TP


def test_auto_leaves_speculation_out_where_full_batches_make_it_dearer(capsys: pytest.CaptureFixture[str]) -> None:
    plain = plan_rows(capsys, *BUSY)
    auto = plan_rows(capsys, *BUSY, "--spec-method", "ngram", "--spec", "auto")
    forced = plan_rows(capsys, *BUSY, "--spec-method", "ngram")
    assert all("spec" not in r for r in auto)
    assert [(r["layout"], r["replicas"]) for r in auto] == [(r["layout"], r["replicas"]) for r in plain]
    assert all(r["spec"]["method"] == "ngram" for r in forced)
    assert forced[0]["usd_per_hour"] > plain[0]["usd_per_hour"]


def test_auto_still_splits_the_plain_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--rate", "40", "--slo-ttft-p99", "1000", "--slo-tpot-p99", "40",
                         "--hw", "h100-sxm", "-q", "bf16", "--top", "4", "--spec-method", "eagle3", "--spec", "auto", "--json")
    assert code == 0, err
    rows = json.loads(out)["configs"]
    split = [r for r in rows if r["disagg"]]
    assert split and all("spec" not in r for r in split)
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--rate", "40", "--slo-ttft-p99", "1000", "--slo-tpot-p99", "40",
                         "--hw", "h100-sxm", "-q", "bf16", "--spec-method", "eagle3")
    assert code == 0 and "split: speculative decoding with disaggregation is not modelled" in out


@pytest.mark.parametrize(("args", "words"), [
    (("--spec", "auto"), "go with --spec-method"),
    (("--spec-tokens", "3"), "go with --spec-method"),
    (("--spec-method", "mtp"), "MTP layers"),
    (("--spec-method", "medusa"), "--spec-method must be one of"),
    (("--spec-method", "draft"), "--draft-model"),
])
def test_bad_speculation_is_a_clear_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...], words: str) -> None:
    code, out, err = cli(capsys, *BASE, *TIGHT, *args)
    assert code == 2 and words in err and "Traceback" not in err


def test_the_frontier_runs_each_layout_with_and_without_speculation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "plan", "llama-3.1-8b", "--frontier", "--hw", "h100-sxm", "-q", "fp8",
                         "--spec-method", "eagle3", "--concurrencies", "1,16", "--json")
    assert code == 0, err
    points = json.loads(out)["points"]
    plain = {(p["layout"], p["concurrency"]): p for p in points if p["spec"] is None}
    fast = {(p["layout"].split(" + ")[0], p["concurrency"]): p for p in points if p["spec"] is not None}
    assert plain and set(plain) == set(fast)  # every layout and concurrency twice
    assert all(p["spec"].startswith("eagle3 k=") for p in fast.values())
    # one user: speculation makes the stream faster (a=0.65 accepts ~1.9 tokens a pass)
    one = [k for k in plain if k[1] == 1]
    assert all(fast[k]["tok_s_per_user"] > 1.3 * plain[k]["tok_s_per_user"] for k in one)
    code, _, err = cli(capsys, "plan", "llama-3.1-8b", "--frontier", "--spec-method", "eagle3", "--spec", "auto")
    assert code == 2 and "--spec auto" in err and "Traceback" not in err
    code, _, err = cli(capsys, "simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--frontier", "--spec-tokens", "3")
    assert code == 2 and "--spec-method" in err and "Traceback" not in err
