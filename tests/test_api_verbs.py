"""Every CLI command that prints `--json` has its API function, and the command prints exactly that
function's `to_json()` on the same inputs: the verbs beyond tests/test_api.py's (utilization, the
catalog `show`s, the `runs` verbs, `simulate`/`plan --frontier`), and a walk over the whole command
tree that fails on a new `--json` command nobody gave an API function."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import tokometer
from bench_fixtures import bench_home, run_cli  # noqa: F401
from test_bench_importers import llama_bench

# every command path with a --json option -> the public API function it prints
API_OF = {
    ("estimate",): "estimate", ("simulate",): "simulate", ("plan",): "plan", ("validate",): "validate",
    ("calibrate",): "calibrate", ("fit",): "fit", ("sweep",): "sweep", ("bench",): "benchmark", ("probe",): "probe",
    ("utilization",): "utilization", ("feel",): "feel",
    ("hardware", "list"): "list_catalog", ("models", "list"): "list_catalog", ("quants", "list"): "list_catalog",
    ("engines", "list"): "list_catalog", ("hardware", "show"): "show_hardware", ("models", "show"): "show_model",
    ("runs", "list"): "list_runs", ("runs", "show"): "show_run", ("runs", "compare"): "compare_runs",
    ("runs", "export"): "export_runs", ("runs", "import"): "import_runs", ("runs", "path"): "runs_path",
}  # fmt: skip


def json_commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from json_commands(command, (*path, name))
        elif any("--json" in p.opts for p in command.params):
            yield (*path, name)


def test_every_json_command_has_its_api_function() -> None:
    from tokometer.cli import cli

    found = set(json_commands(cli))
    assert found - set(API_OF) == set(), "give these commands an API function (tokometer.api) and list them here"
    assert set(API_OF) - found == set()
    for name in set(API_OF.values()):
        assert name in tokometer.__all__ and tokometer._EXPORTS[name].startswith("tokometer.api."), name
        assert callable(getattr(tokometer, name))


def test_the_command_walk_sees_a_json_command() -> None:
    group = click.Group("g", commands={"a": click.Command("a", params=[click.Option(["--json"], is_flag=True)]),
                                       "b": click.Command("b")})
    assert list(json_commands(group)) == [("a",)]


def cli_json(*args: str) -> str:
    code, out, err = run_cli([*args, "--json"])
    assert code == 0, err
    return out


def same(out: str, result: object) -> None:
    assert out == result.to_json() + "\n"  # type: ignore[attr-defined]


def test_utilization() -> None:
    out = cli_json("utilization", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4_k_m", "--measured-decode", "120")
    result = tokometer.utilization("llama-3.1-8b", "rtx-4090", quant="q4_k_m", measured_decode_tok_s=120.0)
    same(out, result)
    share = json.loads(out)["utilization"]
    assert share and result.report.utilisation.measured_decode_tok_s == 120
    with pytest.raises(tokometer.InputError):
        tokometer.utilization("llama-3.1-8b", "rtx-4090", measured_decode_tok_s=-1)
    # the web form shares the estimate's fields, advise among them (the OpenAPI fuzzer sent one): utilization
    # never advises, and a request that carries the field is answered, not a TypeError
    advised = tokometer.utilization("llama-3.1-8b", "rtx-4090", quant="q4_k_m", measured_decode_tok_s=120.0, advise=True)
    assert advised.report.utilisation.measured_decode_tok_s == 120


def test_catalog_entries() -> None:
    out = cli_json("hardware", "show", "h100-sxm")
    entry = tokometer.show_hardware("h100-sxm")
    same(out, entry)
    assert entry.item.id == "h100-sxm" and json.loads(out)["memory_bandwidth_gb_per_s"] == entry.item.memory_bandwidth_gb_per_s
    out = cli_json("models", "show", "llama-3.1-8b", "--kv-dtype", "fp8")
    model = tokometer.show_model("llama-3.1-8b", kv_dtype="fp8")
    same(out, model)
    assert model.to_dict() != tokometer.show_model("llama-3.1-8b").to_dict()  # the KV figures follow kv_dtype
    with pytest.raises(tokometer.UnknownEntryError):
        tokometer.show_hardware("no-such-device")


def test_runs_verbs(tmp_path: Path) -> None:
    files = []
    for i, depths in enumerate(((0,), (0, 4096))):
        files.append(tmp_path / f"lb{i}.json")
        files[-1].write_text(json.dumps(llama_bench(depths)), encoding="utf-8")
    out = cli_json("runs", "import", str(files[0]))
    imported = json.loads(out)
    assert [i["source"] for i in imported] == ["llama-bench"] and imported[0]["requests"] == 6
    api_import = tokometer.import_runs([files[1]])
    assert api_import.to_json() == json.dumps(api_import.to_dict()["imported"], indent=2)
    first, second = imported[0]["id"], api_import.imported[0]["id"]
    assert second != first

    same(cli_json("runs", "list"), tokometer.list_runs())
    assert [r.id for r in tokometer.list_runs().runs] == [second, first]  # newest first
    assert [r.id for r in tokometer.list_runs(limit=1).runs] == [second]
    same(cli_json("runs", "show", str(first)), tokometer.show_run(first))
    same(cli_json("runs", "show", str(first), "--requests"), tokometer.show_run(first, requests=True))
    page = tokometer.show_run(first, requests_limit=2, requests_offset=1)
    assert page.requests_total == 6 and len(page.run.requests) == 2
    same(cli_json("runs", "compare", str(first), str(second)), tokometer.compare_runs([first, second]))
    same(cli_json("runs", "export", str(first)), tokometer.export_runs([first]))
    assert len(tokometer.export_runs().runs) == 2
    assert tokometer.export_runs([first], requests=False).to_csv().count("\n") >= 2  # a header and one run
    path = tokometer.runs_path()
    same(cli_json("runs", "path"), path)
    assert path.exists and path.path.name == "runs.db"

    with pytest.raises(tokometer.InputError):
        tokometer.compare_runs([first])
    tokometer.delete_run(second)
    assert [r.id for r in tokometer.list_runs().runs] == [first]
    code, _, err = run_cli(["runs", "show", str(second)])
    assert code == 2 and "Traceback" not in err


def test_simulate_frontier() -> None:
    args = ("simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--frontier", "--concurrencies", "1,16", "--prompt", "256",
            "--output", "64")
    out = cli_json(*args)
    result = tokometer.frontier("llama-3.1-8b", "h100-sxm", concurrencies=[1, 16], prompt=256, output=64)
    same(out, result)
    pareto = result.frontier.pareto
    assert pareto and all(p.on_frontier for p in pareto)
    users = [p.tok_s_per_user for p in pareto]
    assert users == sorted(users, reverse=True)
    with pytest.raises(tokometer.InputError, match="fixed --prompt"):
        tokometer.frontier("llama-3.1-8b", "h100-sxm", prompt="lognormal:800:0.6")


def test_plan_frontier() -> None:
    out = cli_json("plan", "llama-3.1-8b", "--frontier", "--hw", "h100-sxm,l40s", "-q", "fp8", "--concurrencies", "4,64",
                   "--prompt", "256", "--output", "64")
    result = tokometer.frontier("llama-3.1-8b", ["h100-sxm", "l40s"], quant="fp8", concurrencies="4,64", prompt=256, output=64)
    same(out, result)
    assert {p.hardware for p in result.frontier.points} == {"h100-sxm", "l40s"}


def test_feel(tmp_path: Path) -> None:
    same(cli_json("feel", "--rates", "3,30", "--lang", "fr", "--seconds", "5"), tokometer.feel("3,30", lang="fr", seconds=5.0))
    answer = tmp_path / "answer.txt"
    answer.write_text("One two three, four five.", encoding="utf-8")
    out = cli_json("feel", "--rates", "2", "--text", str(answer))
    plan = tokometer.feel([2.0], text="One two three, four five.")
    same(out, plan)
    assert plan.plan["lang"] is None and "".join(plan.tokens) == plan.text and plan.plan["text_tokens"] == len(plan.tokens)
    assert plan.with_tokens()["tokens"] == list(plan.tokens) and "tokens" not in plan.to_dict()
    answer.write_text("  \n", encoding="utf-8")
    code, _, err = run_cli(["feel", "--text", str(answer), "--json"])
    assert code == 2 and "empty" in err
    with pytest.raises(tokometer.InputError):
        tokometer.feel("0")


def test_simulate_takes_one_request_type_whose_fields_are_the_commands_options() -> None:
    from dataclasses import fields

    from tokometer.cli import cli
    from tokometer.usecases.simulate import SimulateRequest

    command = cli.get_command(click.Context(cli), "simulate")
    assert command is not None
    options = {p.name for p in command.params} - {"frontier", "concurrencies", "plot_file", "as_json", "trace_file"}
    assert options | {"trace"} == {f.name for f in fields(SimulateRequest)}  # the list is written once
    request = SimulateRequest("llama-3.1-8b", "h100-sxm", offline=8, prompt=200, output=20, max_num_seqs=4)
    typed = tokometer.simulate(request)
    assert typed.to_json() == tokometer.simulate("llama-3.1-8b", "h100-sxm", offline=8, prompt=200, output=20, max_num_seqs=4).to_json()
    assert typed.deployment.policy.max_num_seqs == 4 and typed.result.completed == 8
    with pytest.raises(tokometer.InputError, match="max_num_seq'"):
        tokometer.simulate("llama-3.1-8b", "h100-sxm", offline=8, max_num_seq=4)
    with pytest.raises(tokometer.InputError, match="hardware"):
        tokometer.simulate("llama-3.1-8b", offline=8)
