"""No input reaches a traceback or a 500 (issue #14, item 3): Hypothesis drives `tokometer estimate`
(in-process, as click runs it) and `/api/estimate` with random combinations of every field of
`EstimateRequest`, valid and not, and checks that each answer is a result or one clean error.

The strategies come from the request's field definitions (`kind`, `flag`, `choices`), so a field added
to the request is fuzzed without touching this file. Names stay in an alphabet with no `/` or `.`: a
path or a Hub id would make the CLI read files or the network, which is not what is under test.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
from tokometer.cli import main
from tokometer.usecases.request import request_fields
from tokometer.web.app import create_app

JUNK = st.text(alphabet="abxyz-_019 ", min_size=1, max_size=10)
MODELS = ["llama-3.1-8b", "llama-3.2-1b", "qwen3-30b-a3b", "llama-3.1-70b", "gemma-3-12b", "deepseek-v3"]


def _catalog_names(name: str) -> list[str]:
    """A handful of real values for a `name` field, so that most examples get past the names."""
    if name in ("model", "draft"):
        return MODELS
    if name in ("hw",):
        return ["rtx-4090", "h100", "m2-ultra", "rtx-3060-12gb", "ddr5-dual-channel", "m4-max", "local"]
    if name == "cpu_hw":
        return ["ddr5-dual-channel", "ddr4-dual-channel", "rtx-4090"]
    if name in ("quant", "draft_quant", "kv_dtype"):
        return ["q4_k_m", "q2_k", "fp16", "bf16", "fp8", "q8_0", "q4_0", "awq"]
    if name == "engine":
        return ["llama.cpp", "vllm", "ollama", "mlx", "tensorrt-llm"]
    if name == "backend":
        return ["cuda", "cpu", "metal", "rocm"]
    return []


FLOATS = st.one_of(
    st.sampled_from([0.0, -1.0, 1e-9, 1e30, math.inf, -math.inf, math.nan]),
    st.sampled_from([0.5, 1.0, 8.0, 16.0, 100.0, 1000.0]),
    st.floats(min_value=0.01, max_value=1e4),
    st.floats(min_value=-10.0, max_value=1e6, allow_nan=False),
)
INTS = st.one_of(
    st.sampled_from([-1, 0, 1, 2, 4, 8, 64, 512, 131_072, 10_000_000]),
    st.integers(min_value=-3, max_value=1 << 20),
)


def value_strategy(fld: Any) -> st.SearchStrategy[Any]:
    """A field's values, from its `kind` and `choices`: mostly plausible, sometimes wrong."""
    kind = fld.metadata["kind"]
    choices = list(fld.metadata["choices"] or ())
    if kind == "name":
        known = _catalog_names(fld.name) + choices
        # three parts real names to one part junk, so that most examples get past name resolution
        return st.one_of(*[st.sampled_from(known)] * 3, JUNK) if known else JUNK
    if kind == "float":
        return FLOATS
    if kind == "int":
        return INTS
    if kind == "layers":
        return st.one_of(INTS, st.floats(min_value=-1.0, max_value=2.0), st.sampled_from(["0.8", "26", "all", "-3"]))
    if kind == "text":
        return st.sampled_from([*choices, "nvlink", "pcie4x8", "pcie3", "64", "-5", "warp", "pcie9x99"])
    if kind == "flag":
        return st.booleans()
    raise AssertionError(f"no strategy for kind {kind!r} ({fld.name})")


FIELDS = [f for f in request_fields() if f.metadata["kind"] != "object"]


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A random subset of the request's fields (a few at a time, as users type them), each with a value."""
    chosen = draw(st.lists(st.sampled_from(FIELDS), max_size=5, unique_by=lambda f: f.name))
    return {f.name: draw(value_strategy(f)) for f in chosen}


def cli_args(fields: dict[str, Any]) -> list[str]:
    """The command line for `fields`: the model as the argument, every other field as `--flag=value`."""
    flags = {f.name: f.metadata["flag"] for f in FIELDS}
    args = ["estimate"]
    if "model" in fields:
        args.append(str(fields["model"]))
    for name, value in fields.items():
        if name != "model" and flags[name]:
            args.append(f"{flags[name]}={value}")
    return args


def run_in_process(args: list[str]) -> tuple[int, str, str]:
    """`tokometer ARGS` through the real entry point (`main`), captured as click's runner does."""
    runner = CliRunner()
    with runner.isolation() as (out, err, _):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        return code, out.getvalue().decode(), err.getvalue().decode()


def test_the_strategies_cover_every_request_field() -> None:
    """Each form/CLI field of the request has a strategy, and every catalog value used exists."""
    for fld in FIELDS:
        value_strategy(fld)
    assert any(f.name == "bandwidth_gb_per_s" for f in FIELDS)
    for name in MODELS:
        assert model_catalog().find(name) is not None, name
    assert hardware_catalog().get("rtx-4090") and quant_catalog().get("q4_k_m") and engine_catalog().get("vllm")


@pytest.mark.parametrize("args", [["estimate", "--bandwidth=1000"], ["estimate", "llama-3.1-8b", "--bandwidth=1000"]])
def test_a_custom_device_without_memory_is_a_result(args: list[str]) -> None:
    """The seed of item 3: a custom device given only its bandwidth has no memory limit, not a NaN."""
    code, out, err = run_in_process([*args, "--json"])
    assert code == 0, err
    data = json.loads(out)
    assert data["memory"]["device_memory_gb"] is None and data["memory"]["max_sessions"] is None
    assert data["decode"]["ceiling_tok_s"] > 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests(), st.booleans())
def test_the_cli_answers_any_flags_with_a_result_or_one_error_line(fields: dict[str, Any], as_json: bool) -> None:
    args = cli_args(fields) + (["--json"] if as_json else [])
    code, out, err = run_in_process(args)
    event(f"exit {code}")
    assert "Traceback" not in err + out, args
    if code == 0:
        assert out.strip(), args
        if as_json:
            json.loads(out)
        return
    assert code == 2, (args, code, err)
    lines = [line for line in err.splitlines() if line.strip()]
    errors = [line for line in lines if line.lower().startswith("error")]
    assert len(errors) == 1 and errors[0] == lines[-1], (args, err)  # click may print its usage above


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app(), raise_server_exceptions=False)


def _as_query(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(requests(), st.booleans())
def test_the_api_answers_any_fields_with_a_result_or_a_json_error(
    client: TestClient, fields: dict[str, Any], as_query: bool
) -> None:
    if as_query:
        response = client.get("/api/estimate", params={k: _as_query(v) for k, v in fields.items()})
    else:
        body = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in fields.items()}
        response = client.post("/api/estimate", json=body)
    event(f"HTTP {response.status_code}")
    assert response.status_code < 500, (fields, response.text[:300])
    data = response.json()
    if response.status_code >= 400:
        assert response.status_code in (413, 422) and isinstance(data["error"], str) and data["error"], fields
        assert "\n" not in data["error"]
    else:
        assert data["decode"]["ceiling_tok_s"] >= data["decode"]["estimate_tok_s"] * (1 - 1e-9)


def test_a_model_too_small_for_a_finite_ceiling_is_one_error(client: TestClient) -> None:
    """2.2e-309 B parameters: the step is finite (fixed costs) but the ceiling is not; found by the property above."""
    response = client.post("/api/estimate", json={"params_b": 2.225073858507203e-309})
    assert response.status_code == 422 and "no finite decode step" in response.json()["error"]
    code, out, err = run_in_process(["estimate", "--params", "2.225073858507203e-309", "--hw", "rtx-4090"])
    assert code == 2 and "no finite decode step" in err and "Traceback" not in err + out


def test_an_absurd_parameter_count_is_refused_as_implausible(client: TestClient) -> None:
    """`--params 1e30` (found by the property above) printed 30-digit figures; now one clear refusal."""
    code, out, err = run_in_process(["estimate", "--params", "1e30", "--hw", "rtx-4090"])
    assert code == 2 and "implausible" in err and "--params" in err and "Traceback" not in err + out
    response = client.post("/api/estimate", json={"params_b": 1e30})
    assert response.status_code == 422 and "implausible" in response.json()["error"]
    code, out, err = run_in_process(["estimate", "--params", "2000", "--hw", "h100-sxm", "--tp", "8"])
    assert code == 0, err  # the largest real models still pass
