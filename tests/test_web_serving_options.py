"""The Serving page's speculative decoding and shared-prefix options: `/api/simulate` takes them with
`tokometer simulate`'s names, answers what `tokometer.simulate` answers for the same inputs (the
chosen point's result and the deployment, speculation included), shows the prefix cache's hit share,
documents them in OpenAPI with their bounds, and refuses bad values with a 422 naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

import tokometer
from tokometer.web.app import create_app
from tokometer.web.openapi import openapi

SETUP = {"model": "llama-3.1-8b", "hw": "h100-sxm", "quant": "bf16", "prompt_tokens": 500, "output_tokens": 100,
         "num_requests": 200, "rate_per_s": 6, "rates_per_s": [6]}
OVER_TIME = ("batch_over_time", "kv_over_time")


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def library(**options: Any) -> dict[str, Any]:
    """`tokometer.simulate` for SETUP's deployment and workload, with the CLI's option names."""
    result = tokometer.simulate("llama-3.1-8b", "h100-sxm", quant="bf16", prompt=500, output=100, num_requests=200,
                                rate=6.0, **options)
    return result.to_dict()


@pytest.mark.parametrize(
    "options",
    [
        {"spec_method": "eagle3", "spec_tokens": 3},
        {"spec_method": "ngram", "spec_acceptance": 0.5},
        {"spec_method": "draft", "draft_model": "llama-3.2-1b"},
        {"system_prompt": 2000, "system_prompt_share": 0.5, "system_prompts": 2, "turns": 3},
        {"spec_method": "eagle3", "system_prompt": 1500},
    ],
    ids=["eagle3", "ngram", "draft", "prefixes", "both"],
)
def test_the_options_give_what_the_library_gives(client: TestClient, options: dict[str, Any]) -> None:
    answer = client.post("/api/simulate", json={**SETUP, **options})
    assert answer.status_code == 200, answer.json()
    web = answer.json()
    lib = library(**options)
    expected = {k: v for k, v in lib["result"].items() if k not in OVER_TIME}
    chosen = {k: v for k, v in web["chosen"].items() if k in expected}
    assert chosen == expected
    assert {k: v for k, v in web["deployment"].items() if k != "label"} == lib["deployment"]
    if "spec_method" in options:
        spec = web["deployment"]["speculation"]
        assert spec["method"] == options["spec_method"] and spec["tokens_per_pass"] > 1
        assert options["spec_method"] in web["deployment"]["label"]
    else:
        assert "speculation" not in web["deployment"]
    if "system_prompt" in options:
        assert 0 < web["chosen"]["prefix_hit_share"] < 1
        assert web["workload"]["system_prompt"] == options["system_prompt"]


def test_speculation_shortens_time_per_token_and_prefixes_hit_the_cache(client: TestClient) -> None:
    plain = client.post("/api/simulate", json=SETUP).json()
    spec = client.post("/api/simulate", json={**SETUP, "spec_method": "eagle3"}).json()
    shared = client.post("/api/simulate", json={**SETUP, "system_prompt": 3000}).json()
    assert spec["chosen"]["tpot_s"]["p50"] < plain["chosen"]["tpot_s"]["p50"]
    assert plain["chosen"]["prefix_hit_share"] in (None, 0)
    assert shared["chosen"]["prefix_hit_share"] > 0.5  # 3,000 of 3,500 prompt tokens are the one shared prompt


def test_a_get_with_the_same_options_answers_the_same(client: TestClient) -> None:
    body = {**SETUP, "spec_method": "ngram", "spec_tokens": 4, "system_prompt": 800, "turns": 2}
    query = {k: ",".join(map(str, v)) if isinstance(v, list) else str(v) for k, v in body.items()}
    assert client.get("/api/simulate", params=query).json() == client.post("/api/simulate", json=body).json()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"spec_method": "magic"}, "spec_method"),
        ({"spec_method": "ngram", "spec_tokens": 0}, "spec_tokens"),
        ({"spec_method": "ngram", "spec_tokens": 17}, "spec_tokens"),
        ({"spec_method": "ngram", "spec_tokens": 2.5}, "spec_tokens"),
        ({"spec_method": "ngram", "spec_acceptance": 1.5}, "spec_acceptance"),
        ({"spec_method": "ngram", "spec_acceptance": "most"}, "spec_acceptance"),
        ({"spec_tokens": 3}, "spec_method"),
        ({"spec_method": "draft"}, "draft_model"),
        ({"spec_method": "draft", "draft_model": "/etc/passwd"}, "draft_model"),
        ({"spec_method": "mtp"}, "spec_method"),  # llama-3.1-8b has no MTP head
        ({"spec_method": "eagle3", "draft_model": "llama-3.2-1b"}, "draft_model"),
        ({"system_prompt": -1}, "system_prompt"),
        ({"system_prompt": 2_000_000}, "system_prompt"),
        ({"system_prompt_share": 0.5}, "system_prompt_share"),
        ({"system_prompt": 100, "system_prompt_share": 2}, "system_prompt_share"),
        ({"system_prompts": 0}, "system_prompts"),
        ({"turns": 0}, "turns"),
        ({"turns": 65}, "turns"),
    ],
)
def test_bad_options_are_a_422_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    answer = client.post("/api/simulate", json={**SETUP, **change})
    assert answer.status_code == 422, answer.json()
    body = answer.json()
    assert body.get("field") == field and body["error"], body


def test_openapi_documents_the_options_with_their_bounds() -> None:
    doc = openapi()
    body = doc["paths"]["/api/simulate"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"]
    schemas = doc["components"]["schemas"]
    for name in ("spec_method", "spec_tokens", "spec_acceptance", "draft_model", "system_prompt", "system_prompt_share",
                 "system_prompts", "turns"):
        assert name in body and schemas[name]["description"]
    assert set(schemas["spec_method"]["anyOf"][0]["enum"]) == {"draft", "mtp", "eagle3", "ngram"}
    assert schemas["spec_tokens"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 16}
    assert schemas["spec_acceptance"]["anyOf"][0] == {"type": "number", "minimum": 0, "maximum": 1}
    assert schemas["turns"]["anyOf"][0]["maximum"] == 64


PLAN = {"model": "llama-3.1-8b", "rate_per_s": 2, "prompt_tokens": 200, "output_tokens": 400, "slo_ttft_ms": 3000,
        "slo_tpot_ms": 7, "hw": "h100-sxm", "quant": "bf16", "top": 2, "disagg": False}


def test_the_plan_takes_the_same_speculation_as_the_library(client: TestClient) -> None:
    from tokometer.api.serving import plan

    web = client.post("/api/plan", json={**PLAN, "spec_method": "ngram", "spec": "auto"}).json()
    lib = plan("llama-3.1-8b", rate=2, prompt=200, output=400, slo_ttft_p99=3000, slo_tpot_p99=7, hw="h100-sxm", quant="bf16",
               top=2, disagg=False, strict=False, spec_method="ngram", spec="auto").to_dict()
    assert web["configs"] == lib["configs"] and web["configs"][0]["spec"]["method"] == "ngram"


@pytest.mark.parametrize(("change", "field"), [
    ({"spec_method": "magic"}, "spec_method"),
    ({"spec": "always", "spec_method": "ngram"}, "spec"),
    ({"spec": "auto"}, "spec_method"),
    ({"spec_method": "ngram", "spec_tokens": 40}, "spec_tokens"),
    ({"spec_method": "draft", "draft_model": "../x"}, "draft_model"),
])
def test_bad_plan_speculation_is_a_422_naming_the_field(client: TestClient, change: dict[str, Any], field: str) -> None:
    answer = client.post("/api/plan", json={**PLAN, **change})
    assert answer.status_code == 422 and answer.json().get("field") == field, answer.json()
