"""`GET /api/openapi.json`: the web API as an OpenAPI 3.1 document, generated from the definitions
the handlers validate with, so the description and the checks cannot drift apart.

Each field is defined once: the estimate's in `usecases.request.EstimateRequest` (name, kind,
choices, help), every other in `web.inputs.API_FIELDS` (kind, unit, range, list length). Which
endpoint takes which fields comes from the same tuples the handlers check against
(`inputs.SETUP_FIELDS`, `LEVER_FIELDS`, `web.serving.SIMULATE_FIELDS`...). Computing endpoints take
a JSON object (POST; the same names in a query string work with GET and are described on the
GET-only endpoints); numbers may also come as decimal strings, as a form sends them. Bodies that
break the schema are answered 422 with `{"error", "field"}`, never 500. The document is plain dicts:
no schema library is imported for it.
"""

from __future__ import annotations

from typing import Any

from tokometer import __version__
from tokometer.api.request import request_fields
from tokometer.web.inputs import (
    API_FIELDS,
    LEVER_FIELDS,
    MAX_INT,
    MAX_NAME_CHARS,
    SETUP_FIELDS,
    ApiField,
)
from tokometer.web.serving import FRONTIER_FIELDS, PLAN_FIELDS, SIMULATE_FIELDS

NUMERAL = {"type": "string", "maxLength": 64, "description": "a decimal numeral, as a form or a query string sends it"}
ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string", "description": "what is wrong, for a person"},
        "field": {"type": "string", "description": "the request field at fault, for a form to mark"},
        "suggestions": {"type": "array", "items": {"type": "string"}, "description": "near catalog names"},
    },
}
NOT_ROOFLINE = set(LEVER_FIELDS)
# POST endpoint -> (summary, the fields it takes): the tuples `web.app`'s handlers check against
COMPUTING: dict[str, tuple[str, tuple[str, ...]]] = {
    "/api/estimate": ("Decode/prefill speed, TTFT, latency and memory of one setup", SETUP_FIELDS),
    "/api/curve": ("One setup's speed along an axis (context, batch...)", (*SETUP_FIELDS, "axis", "values")),
    "/api/roofline": ("One device's steps on its roofline", (*(f for f in SETUP_FIELDS if f not in NOT_ROOFLINE), "batches")),
    "/api/utilisation": ("Measured speed as a share of the datasheet (MBU/MFU)", (*(f for f in SETUP_FIELDS if f not in NOT_ROOFLINE), "measured_decode_tok_s", "measured_prefill_tok_s")),
    "/api/utilization": ("Same as /api/utilisation", (*(f for f in SETUP_FIELDS if f not in NOT_ROOFLINE), "measured_decode_tok_s", "measured_prefill_tok_s")),
    "/api/latency": ("End-to-end latency from TTFT and decode speed", ("ttft_ms", "output_tokens", "tok_s")),
    "/api/panorama": ("The model's speed across hardware tiers", SETUP_FIELDS),
    "/api/feel": ("What a streaming speed feels like: the timing of a sample answer", ("rates", "seconds", "lang", "text")),
    "/api/simulate": ("A serving rate sweep with its knee (the serving simulator)", SIMULATE_FIELDS),
    "/api/plan": ("The cheapest setups meeting p99 objectives", PLAN_FIELDS),
    "/api/frontier": ("The predicted frontier: tokens/s per GPU against tokens/s per user, with TTFT", FRONTIER_FIELDS),
}
# GET endpoint -> (summary, query fields, path parameters, what a 200 holds)
READING: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], str]] = {
    "/api/meta": ("Version, reading speeds, defaults", (), (), "object"),
    "/api/schema": ("The estimate form's fields", (), (), "object"),
    "/api/openapi.json": ("This document", (), (), "object"),
    "/api/hardware": ("The hardware catalog", (), (), "array"),
    "/api/models": ("The model catalog", (), (), "array"),
    "/api/quants": ("The quantization formats", (), (), "array"),
    "/api/engines": ("The engines", (), (), "array"),
    "/api/hardware/{name}": ("One device", (), ("name",), "object"),
    "/api/runs": ("Stored benchmark runs, newest first", ("limit",), (), "object"),
    "/api/runs/{run_id}": ("One stored run with a page of its requests", ("requests_limit", "requests_offset"), ("run_id",), "object"),
    "/api/runs/{run_id}/serving": ("A stored rate/concurrency run beside the simulated curve", (), ("run_id",), "object"),
}


def _number(spec: ApiField, integer: bool) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer" if integer else "number"}
    if spec.low is not None:
        schema["exclusiveMinimum" if spec.low_open else "minimum"] = spec.low
    if spec.high is not None:
        schema["maximum"] = spec.high
    return schema


def field_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one request field, from its one definition."""
    spec = API_FIELDS.get(name)
    if spec is None:
        meta = next(f.metadata for f in request_fields() if f.name == name)
        kind = meta["kind"]
        spec = ApiField(
            {"name": "text", "text": "text", "layers": "layers"}.get(kind, kind), meta["help"] or name,
            low=-MAX_INT if kind == "int" else None, high=MAX_INT if kind == "int" else None, choices=meta["choices"],
        )
    text = {"type": "string", "maxLength": MAX_NAME_CHARS, **({"enum": list(spec.choices)} if spec.choices else {})}
    kinds: dict[str, list[dict[str, Any]]] = {
        "float": [_number(spec, False), NUMERAL],
        "int": [_number(spec, True), NUMERAL],
        "text": [text],
        "layers": [{"type": "number"}, NUMERAL],
        "flag": [{"type": "boolean"}, {"type": "string", "enum": ["true", "false", "1", "0", "yes", "no", "on", "off"]}],
        "floats": [{"type": "array", "items": _number(spec, False), "minItems": 1, "maxItems": spec.max_items or 64}, {"type": "string", "maxLength": 1000}],
        "ints": [{"type": "array", "items": _number(spec, True), "minItems": 1, "maxItems": spec.max_items or 64}, {"type": "string", "maxLength": 1000}],
    }
    schema: dict[str, Any] = {"anyOf": [*kinds[spec.kind], {"type": "null"}], "description": spec.help}
    if spec.unit:
        schema["x-unit"] = spec.unit
    return schema


def _responses(ok: str) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    return {
        "200": {"description": "the result", "content": {"application/json": {"schema": {"type": ok}}}},
        "404": {"description": "no such resource", **error},
        "413": {"description": "body over 64 KiB", **error},
        "422": {"description": "a malformed body or a bad value; `field` names it", **error},
    }


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the JSON API."""
    paths: dict[str, Any] = {}
    fields: dict[str, None] = {}  # every body field, defined once under components
    for path, (summary, names) in COMPUTING.items():
        body = {"type": "object", "additionalProperties": False, "properties": {n: {"$ref": f"#/components/schemas/{n}"} for n in dict.fromkeys(names)}}
        fields.update(dict.fromkeys(names))
        paths[path] = {"post": {
            "summary": summary, "operationId": "post_" + path.removeprefix("/api/").replace("/", "_"),
            "requestBody": {"required": False, "content": {"application/json": {"schema": body}}},
            "responses": _responses("object"),
        }}
    for path, (summary, query, in_path, ok) in READING.items():
        parameters = [{"name": n, "in": "path", "required": True, "schema": {"type": "string", "maxLength": MAX_NAME_CHARS}} for n in in_path]
        parameters += [{"name": n, "in": "query", "required": False, "schema": field_schema(n)["anyOf"][0], "description": API_FIELDS[n].help} for n in query]
        paths[path] = {"get": {
            "summary": summary, "operationId": "get_" + path.removeprefix("/api/").replace("/", "_").replace("{", "").replace("}", "").replace(".", "_"),
            "parameters": parameters, "responses": _responses(ok),
        }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "tokometer", "version": __version__, "description": "How fast will this model run on this hardware, and why."},
        "paths": paths,
        "components": {"schemas": {"Error": ERROR, **{n: field_schema(n) for n in fields}}},
    }


__all__ = ["COMPUTING", "READING", "field_schema", "openapi"]
