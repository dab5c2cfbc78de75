"""Every CLI verb has its API function, the CLI prints exactly that function's result, and the
result's `to_json()` equals the verb's `--json` on the same inputs (an independent API call where the
verb is deterministic; the very result the CLI got where it measures something live)."""

from __future__ import annotations

import asyncio
import csv
import importlib
import inspect
import json
from collections.abc import Callable, Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest

import tokometer
from bench_fixtures import bench_home, run_cli, synthetic  # noqa: F401
from tokometer.api.catalogs import CatalogListing
from tokometer.calibration_data import MEASUREMENTS_CSV

VERBS = ["estimate", "simulate", "plan", "validate", "calibrate", "fit", "sweep", "benchmark", "bench_async", "probe", "list_catalog"]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Wrap every API verb so a test can see what the CLI got back from it."""
    got: dict[str, Any] = {}

    def spy(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            got[name] = fn(*args, **kwargs)
            return got[name]

        return wrapped

    for name in VERBS:
        module = importlib.import_module(tokometer._EXPORTS[name])
        monkeypatch.setitem(vars(tokometer), name, getattr(module, name))  # the test's own calls go unwatched
        if name != "bench_async":
            monkeypatch.setattr(module, name, spy(name, getattr(module, name)))
    yield got


def cli_json(*args: str) -> str:
    code, out, err = run_cli([*args, "--json"])
    assert code == 0, err
    return out


def same(cli_out: str, result: Any) -> None:
    assert cli_out == result.to_json() + "\n"
    assert json.loads(cli_out) == json.loads(json.dumps(result.to_dict()))[getattr(result, "kind", None)] if isinstance(
        result, CatalogListing
    ) else json.loads(cli_out) == json.loads(result.to_json())


def test_estimate(seen: dict[str, Any]) -> None:
    out = cli_json("estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4_k_m", "--batch", "4")
    assert out == seen["estimate"].to_json() + "\n"
    result = tokometer.estimate("llama-3.1-8b", "rtx-4090", quant="q4_k_m", batch=4)
    same(out, result)
    assert isinstance(result, tokometer.Estimate) and 0 < result.estimate_tok_s < result.ceiling_tok_s
    request = tokometer.EstimateRequest(model="llama-3.1-8b", hw="rtx-4090", quant="q4_k_m", batch=4)
    assert tokometer.estimate(request).to_json() == result.to_json()


def test_simulate_one_run_and_a_curve(seen: dict[str, Any]) -> None:
    out = cli_json("simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--offline", "16", "--prompt", "200", "--output", "20")
    assert out == seen["simulate"].to_json() + "\n"
    same(out, tokometer.simulate("llama-3.1-8b", "h100-sxm", offline=16, prompt=200, output=20))
    out = cli_json("simulate", "llama-3.1-8b", "--hw", "h100-sxm", "--rate", "1,4", "-n", "12", "--prompt", "200", "--output", "20")
    curve = tokometer.simulate("llama-3.1-8b", "h100-sxm", rate=[1, 4], num_requests=12, prompt=200, output=20)
    same(out, curve)
    assert len(curve.points) == 2 and curve.result is None


def test_plan(seen: dict[str, Any]) -> None:
    args = ("plan", "llama-3.1-8b", "--rate", "5", "--slo-ttft-p99", "2000", "--slo-tpot-p99", "100", "--hw", "h100-sxm",
            "-q", "bf16", "--price", "h100-sxm=2.0", "--no-disagg", "--top", "2")
    out = cli_json(*args)
    assert out == seen["plan"].to_json() + "\n"
    result = tokometer.plan("llama-3.1-8b", rate=5, slo_ttft_p99=2000, slo_tpot_p99=100, hw="h100-sxm", quant=["bf16"],
                            price={"h100-sxm": 2.0}, disagg=False, top=2)
    same(out, result)
    assert result.configs() and all(c["usd_per_hour"] > 0 for c in result.configs())


@pytest.fixture
def small_cases(tmp_path: Path) -> Path:
    """The shipped measurements of two devices: enough to score and fit, quick to run."""
    with open(MEASUREMENTS_CSV, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    keep = [r for r in rows if r["hardware_id"] in ("nvidia_rtx_4090", "nvidia_a40")]
    assert len(keep) >= 10
    path = tmp_path / "cases.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(keep)
    return path


def test_validate(seen: dict[str, Any], small_cases: Path) -> None:
    out = cli_json("validate", str(small_cases), "--baseline", "ceiling")
    assert out == seen["validate"].to_json() + "\n"
    result = tokometer.validate(small_cases, baseline="ceiling")
    same(out, result)
    assert result.report["rows_scored"] > 0


def test_calibrate_and_reset(seen: dict[str, Any], small_cases: Path, tmp_path: Path) -> None:
    out = cli_json("calibrate", str(small_cases), "--out", str(tmp_path / "cli.toml"))
    assert out == seen["calibrate"].to_json() + "\n"
    result = tokometer.calibrate(small_cases, out=tmp_path / "api.toml")
    data = json.loads(out)
    assert data["written"].endswith("cli.toml") and result.to_dict()["written"].endswith("api.toml")
    assert {**data, "written": None} == {**json.loads(result.to_json()), "written": None}
    assert (tmp_path / "api.toml").read_text(encoding="utf-8") == (tmp_path / "cli.toml").read_text(encoding="utf-8")
    same(cli_json("calibrate", "--reset"), tokometer.calibrate(reset=True))


def test_fit(seen: dict[str, Any]) -> None:
    out = cli_json("fit", "--hw", "rtx-4090", "--model", "llama-3.1-8b,qwen3-8b", "--context", "8192")
    assert out == seen["fit"].to_json() + "\n"
    result = tokometer.fit("rtx-4090", model="llama-3.1-8b,qwen3-8b", context_tokens=8192)
    same(out, result)
    assert result.report.rows


def test_sweep(seen: dict[str, Any]) -> None:
    out = cli_json("sweep", "--model", "llama-3.1-8b", "--hw", "rtx-4090,h100-sxm", "-q", "q4_k_m,q8_0", "--context", "0,4096")
    assert out == seen["sweep"].to_json() + "\n"
    result = tokometer.sweep(model="llama-3.1-8b", hw=["rtx-4090", "h100-sxm"], quant="q4_k_m,q8_0", context=(0, 4096))
    same(out, result)
    assert result.result.size == 8


@pytest.mark.parametrize("kind", ["hardware", "models", "quants", "engines"])
def test_catalog_lists(seen: dict[str, Any], kind: str) -> None:
    out = cli_json(kind, "list")
    assert out == seen["list_catalog"].to_json() + "\n"
    same(out, tokometer.list_catalog(kind))
    assert tokometer.list_catalog(kind).items


def test_catalog_filters_as_the_cli() -> None:
    out = cli_json("hardware", "list", "--vendor", "apple", "--sort", "bandwidth")
    listing = tokometer.list_catalog("hardware", vendor="apple", sort="bandwidth")
    same(out, listing)
    bandwidths = [h.memory_bandwidth_gb_per_s for h in listing.items]
    assert bandwidths == sorted(bandwidths, reverse=True) and {h.vendor for h in listing.items} == {"apple"}


def test_bench_prints_the_api_result_and_the_coroutine_measures_too(seen: dict[str, Any]) -> None:
    with synthetic(tok_s=400.0, ttft_s=0.005) as server:
        base = [server.url, "--runs", "1", "--warmup", "0", "--max-tokens", "16", "--prompt-tokens", "0", "--no-save"]
        out = cli_json("bench", *base)
        assert out == seen["benchmark"].to_json() + "\n"
        run = asyncio.run(tokometer.bench_async(server.url, runs=1, warmup=0, max_tokens=16, prompt_tokens=0, save=False))
    cli_run, api_run = json.loads(out), run.to_dict()
    assert set(cli_run) == set(api_run) and run.status == "complete"
    assert cli_run["url"] == api_run["url"] and cli_run["config"] == api_run["config"]


def test_probe_prints_the_api_result(seen: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import tokometer.bench.probe as probe_module
    from test_bench_probe import fake_result
    from tokometer.bench.machine_load import LoadSample

    monkeypatch.setattr(probe_module, "system_load", lambda: LoadSample(0.01, None, "fake"))
    monkeypatch.setattr(probe_module, "probe", lambda quick=False, device="auto": fake_result(33.0))
    out = cli_json("probe", "--quick", "--no-save")
    assert out == seen["probe"].to_json() + "\n"
    same(out, tokometer.probe(quick=True, save=False))
    assert json.loads(out)["probe"]["memory_bandwidth_gb_per_s"] == 33.0


def test_busy_probe_is_refused_unless_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    import tokometer.bench.probe as probe_module
    from test_bench_probe import fake_result
    from tokometer.bench.machine_load import LoadSample

    monkeypatch.setattr(probe_module, "probe", lambda quick=False, device="auto": fake_result(5.0))
    with pytest.raises(tokometer.InputError, match="not saved"):
        tokometer.probe(quick=True, load=lambda: LoadSample(0.9, None, "fake"))


# --- the public names ------------------------------------------------------------------------------

PUBLIC = [n for n in tokometer.__all__ if n != "__version__"]


@pytest.mark.parametrize("name", PUBLIC)
def test_public_names_have_docstrings_and_type_hints(name: str) -> None:
    member = getattr(tokometer, name)
    assert inspect.getdoc(member), f"tokometer.{name} has no docstring"
    if inspect.isclass(member):
        if is_dataclass(member):
            assert all(f.type for f in fields(member)), f"tokometer.{name} has an untyped field"
        for attr, value in vars(member).items():
            if callable(value) and not attr.startswith("_"):
                check_hints(f"{name}.{attr}", value)
    elif callable(member):
        check_hints(name, member)


def check_hints(name: str, fn: Callable[..., Any]) -> None:
    sig = inspect.signature(inspect.unwrap(fn))
    hints = inspect.get_annotations(inspect.unwrap(fn))  # as written: names only the type checker imports stay strings
    assert "return" in hints, f"{name} has no return type"
    for param in sig.parameters.values():
        if param.name in ("self", "cls"):
            continue
        assert param.name in hints, f"{name}: parameter {param.name} has no type hint"


def test_the_hint_check_fails_on_an_untyped_function() -> None:
    def untyped(x, y: int) -> int:  # type: ignore[no-untyped-def]
        return y

    with pytest.raises(AssertionError, match="parameter x"):
        check_hints("untyped", untyped)


RESULTS = [n for n, m in tokometer._EXPORTS.items() if m.startswith("tokometer.api.") and n[0].isupper()]


@pytest.mark.parametrize("name", RESULTS)
def test_results_are_frozen_with_the_cli_json(name: str) -> None:
    cls = getattr(tokometer, name)
    assert is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert callable(cls.to_dict) and callable(cls.to_json)


def test_every_verb_is_exported() -> None:
    assert set(VERBS) <= set(tokometer.__all__) and len(RESULTS) == 20  # tests/test_api_verbs.py covers the other ten
    assert all(tokometer._EXPORTS[v].startswith("tokometer.api.") for v in VERBS)
    assert inspect.iscoroutinefunction(tokometer.bench_async)


def test_the_package_ships_its_type_marker() -> None:
    root = Path(tokometer.__file__).parent
    assert (root / "py.typed").is_file()
    pyproject = (root.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in pyproject
