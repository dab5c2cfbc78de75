"""`EstimateRequest` is the one definition of the inputs: the CLI, the web form and its page agree with it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
from starlette.testclient import TestClient

from tokometer.cli import cli, main
from tokometer.errors import InputError
from tokometer.usecases.request import (
    EstimateRequest,
    request_fields,
    request_flags,
    request_schema,
)
from tokometer.web import inputs
from tokometer.web.app import create_app

FORM_JS = Path(__file__).resolve().parents[1] / "src/tokometer/web/static/js/form.js"


def estimate_command() -> click.Command:
    command = cli.get_command(click.Context(cli), "estimate")
    assert command is not None
    return command


def test_every_cli_field_is_an_estimate_option_with_its_default() -> None:
    options = {p.name: p for p in estimate_command().params if isinstance(p, click.Option)}
    for f in request_fields():
        flag = f.metadata["flag"]
        if flag is None:
            assert f.name not in options
            continue
        option = options[f.name]
        assert flag in option.opts
        if f.metadata["show_default"]:
            assert option.default == f.default


def test_the_cli_defaults_build_the_default_request() -> None:
    """What click passes when nothing is typed is exactly `EstimateRequest()`'s defaults."""
    captured: dict[str, Any] = {}
    command = estimate_command()
    ctx = command.make_context("estimate", [])
    captured.update({k: v for k, v in ctx.params.items() if k in {f.name for f in request_fields()}})
    assert EstimateRequest(**captured) == EstimateRequest()


def test_web_field_kinds_come_from_the_request() -> None:
    schema = {row["name"]: row for row in request_schema()}
    assert set(inputs.SETUP_FIELDS) == set(schema)
    for name in inputs.INT_FIELDS:
        assert schema[name]["kind"] == "int"
    for name in inputs.FLOAT_FIELDS:
        assert schema[name]["kind"] == "float"


def test_the_schema_endpoint_serves_the_request_fields() -> None:
    body = TestClient(create_app()).get("/api/schema").json()
    assert [row["name"] for row in body["fields"]] == [row["name"] for row in request_schema()]
    batch = next(row for row in body["fields"] if row["name"] == "batch")
    assert batch == {**batch, "kind": "int", "default": 1, "flag": "--batch"}


# a text input may carry a layers value the server parses (`offload_experts`: a count or "all")
JS_TYPES = {"int": {"int"}, "number": {"float"}, "layers": {"layers"}, "text": {"name", "text", "layers"}, "select": {"name"}}


def test_the_form_page_fields_match_the_request() -> None:
    """form.js keeps its own field list (labels, units, client checks); each request field in it must
    have a compatible input type."""
    text = FORM_JS.read_text(encoding="utf-8")
    block = text.split("export const FIELDS = {", 1)[1].split("\n};", 1)[0]
    page = dict(re.findall(r"^\s+(\w+): \{ type: '(\w+)'", block, re.M))
    schema = {row["name"]: row for row in request_schema()}
    shared = set(page) & set(schema)
    assert len(shared) >= 20
    for name in shared:
        assert schema[name]["kind"] in JS_TYPES[page[name]], (name, page[name], schema[name]["kind"])


@pytest.mark.parametrize(
    ("fields", "field", "cli_text"),
    [
        ({"batch": 0}, "batch", "--batch must be a positive number"),
        ({"bits": 100.0}, "bits", "--bits must be at most 64"),
        ({"tp": 0}, "tp", "--tp must be a whole number of devices"),
        ({"acceptance": 0.5}, "draft", "--acceptance, --draft-tokens and --draft-quant need --draft MODEL"),
        ({"model": "llama-3.1-8b", "params_b": 8.0}, "params_b", "either a model name or --params"),
        ({"backend": "opencl"}, "backend", "--backend must be one of cuda, rocm"),
    ],
)
def test_bad_fields_name_themselves(fields: dict[str, Any], field: str, cli_text: str) -> None:
    with pytest.raises(InputError) as caught:
        EstimateRequest(**fields)
    assert caught.value.field == field
    assert cli_text in caught.value.render(request_flags())
    assert "--" not in str(caught.value)  # the core speaks of parameters


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["estimate", "--tp", "0"], "error: --tp must be a whole number of devices"),
        (["estimate", "--gpu-layers", "5", "--tp", "2"], "error: --gpu-layers together with --tp/--pp is not modelled"),
        (["sweep", "--context=-1"], "error: --context must be zero or more"),
        (["utilization", "--measured-decode", "-1"], "error: --measured-decode must be a positive number"),
    ],
)
def test_the_cli_words_parameters_as_its_flags(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    assert expected in capsys.readouterr().err
