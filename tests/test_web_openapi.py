"""`/api/openapi.json` describes the API the handlers check, and schemathesis fuzzes every endpoint
from it: no 500, no hang, every answer a documented status with the documented JSON shape.

Generated from the same field definitions the handlers validate with (`web.inputs.API_FIELDS`,
`EstimateRequest`), so a field added to a handler but not described (or the reverse) fails here.
The fuzz is deterministic (`derandomize`) with `FUZZ_EXAMPLES` cases per endpoint, positive
(schema-valid) and negative (schema-breaking) bodies and query strings alike.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.config import SchemathesisConfig
from schemathesis.generation import GenerationMode
from starlette.testclient import TestClient

from tokometer.web.app import create_app
from tokometer.web.inputs import API_FIELDS, SETUP_FIELDS
from tokometer.web.openapi import COMPUTING, READING

FUZZ_EXAMPLES = 200
# a hang guard, not a speed claim: speed is measured side by side in benchmarks/web_roundtrip.py.
# A first call that loads the catalogs on a loaded CI core once took 2.01 s against an earlier 2 s bound.
MAX_ANSWER_S = 30.0
APP = create_app()
CONFIG = SchemathesisConfig()
# the fuzzing phase only: its FUZZ_EXAMPLES cases per endpoint, positive and negative, take ~50 s on
# this suite's 2 shared cores; the coverage phase would double that
CONFIG.projects.default.phases.coverage.enabled = False
CONFIG.projects.default.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=FUZZ_EXAMPLES, deterministic=True)
SCHEMA = schemathesis.openapi.from_asgi("/api/openapi.json", APP, config=CONFIG)
CALLS: dict[str, int] = {}  # "METHOD /path" -> cases sent
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(autouse=True)
def _empty_home(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKOMETER_HOME", str(tmp_path))


def test_the_document_is_openapi_3_1_and_lists_every_api_route() -> None:
    doc = TestClient(APP).get("/api/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    routes = {r.path for r in APP.routes if getattr(r, "path", "").startswith("/api/")}
    assert set(doc["paths"]) == routes == set(COMPUTING) | set(READING)


def test_each_field_is_defined_once_with_its_range_and_unit() -> None:
    doc = TestClient(APP).get("/api/openapi.json").json()
    fields = doc["components"]["schemas"]
    estimate = doc["paths"]["/api/estimate"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(estimate["properties"]) == set(SETUP_FIELDS) and estimate["additionalProperties"] is False
    assert all(p == {"$ref": f"#/components/schemas/{n}"} for n, p in estimate["properties"].items())
    seconds = fields["seconds"]
    assert seconds["x-unit"] == "s" and seconds["anyOf"][0] == {"type": "number", "exclusiveMinimum": 0, "maximum": API_FIELDS["seconds"].high}
    assert fields["backend"]["anyOf"][0]["enum"] == ["cuda", "rocm", "metal", "vulkan", "sycl", "cpu"]


def test_the_declared_range_is_the_checked_range() -> None:
    client = TestClient(APP)
    high = API_FIELDS["seconds"].high
    assert client.post("/api/feel", json={"seconds": high}).status_code == 200
    body = client.post("/api/feel", json={"seconds": high * 1.01}).json()
    assert body["field"] == "seconds"
    assert client.get("/api/runs?limit=0").json()["field"] == "limit"


def test_the_footer_links_the_document() -> None:
    from tokometer.web.app import STATIC_DIR

    assert "'/api/openapi.json'" in (STATIC_DIR / "js" / "main.js").read_text(encoding="utf-8")


@SCHEMA.parametrize()
@settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_fuzz_every_endpoint(case: schemathesis.Case) -> None:
    started = time.monotonic()
    response = case.call()
    CALLS[f"{case.method} {case.path}"] = CALLS.get(f"{case.method} {case.path}", 0) + 1
    took = time.monotonic() - started
    assert took < MAX_ANSWER_S, f"{case.method} {case.path} took {took:.1f} s"
    case.validate_response(response, checks=CHECKS)


def test_every_endpoint_with_inputs_got_its_cases() -> None:
    """Runs after the fuzz (file order): each endpoint that takes inputs saw `FUZZ_EXAMPLES` cases."""
    if not CALLS:
        pytest.skip("the fuzz did not run in this session")
    with_inputs = {f"POST {p}" for p in COMPUTING} | {f"GET {p}" for p, (_, query, in_path, _) in READING.items() if query or in_path}
    assert {name: CALLS.get(name, 0) for name in with_inputs} == dict.fromkeys(with_inputs, FUZZ_EXAMPLES)
