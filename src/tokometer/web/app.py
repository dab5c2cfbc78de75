"""The web app: static pages (HTML, CSS, ES modules; no build step) and a JSON API over the public API (`tokometer.api`).

Routes:
    /, /throughput, /batch, /latency, /memory, /utilisation, /curves, /hardware, /feel, /serving, /runs
        the pages (one HTML shell; the page's state lives in its query string)
    /api/estimate          `report.json.estimate_json`, the JSON of `tokometer estimate --json`, levers
                           included (draft, acceptance, draft_tokens, tp, pp, link, gpu_layers...)
    /api/curve, /api/roofline, /api/utilisation, /api/latency, /api/panorama, /api/feel, /api/frontier
    /api/simulate, /api/plan  the Serving page: a rate sweep with its knee and one chosen point, and the
                           cheapest setups meeting p99 objectives (`web.serving`; bounded work per call)
    /api/hardware, /api/models, /api/quants, /api/engines (`tokometer <kind> list --json`)
    /api/runs, /api/runs/{id}, /api/meta
    /api/runs/{id}/serving a stored `bench --rate/--concurrency` run beside the simulated curve (`web.serving`)
    /api/schema            the estimate form's fields, from `EstimateRequest`
    /api/openapi.json      the whole API as OpenAPI 3.1, generated from the fields the handlers check (`web.openapi`)

Computing endpoints take a JSON object (POST) or the same names in a query string (GET); the levers
(`inputs.LEVER_FIELDS`) go to estimate, curve and panorama, not to roofline and utilisation. Errors are
`{"error": message, "field": name}`: 422 for a malformed body or a bad value (the field comes from
`InputError.field`, never from the text; an unknown name adds "suggestions"), 404 for an unknown path or resource. The server never fetches a URL and
never reads a file a request names; benchmark endpoints given on the command line are listed only.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tokometer.api.charts import latency_at_rate, panorama, roofline
from tokometer.api.feel import DEFAULT_RATES_TOK_S, feel
from tokometer.api.request import request_schema
from tokometer.domain.jsontext import to_json
from tokometer.errors import InputError, TokometerError, UnknownEntryError
from tokometer.guard import check_nesting, decode_text
from tokometer.web import compute, serving
from tokometer.web.aliases import aliases_for, canonical
from tokometer.web.inputs import (
    LEVER_FIELDS,
    NAME_FIELDS,
    number_list,
    optional_number,
    setup_kwargs,
    text,
)

STATIC_DIR = Path(__file__).parent / "static"
PAGES = ("throughput", "batch", "latency", "memory", "utilisation", "curves", "hardware", "feel", "serving", "runs")
MAX_BODY_BYTES = 64 * 1024
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]

Data = dict[str, Any]
Handler = Callable[[Data, Request], Any]


def json_response(data: Any, status_code: int = 200) -> Response:
    """The CLI's JSON rendering (`to_json`: non-finite floats become null), never cached."""
    return Response(
        to_json(data), status_code=status_code, media_type="application/json", headers={"cache-control": "no-store"}
    )


def error_response(exc: TokometerError, data: Data | None = None, status_code: int = 422) -> Response:
    """422 with the message and, when the error knows it, the form field to mark (never read from the text).

    Messages name parameters as the API takes them (`params_b must be a positive number`), and
    `field` is that name.
    """
    body: Data = {"error": str(exc)}
    if isinstance(exc, UnknownEntryError):
        body["suggestions"] = exc.suggestions
        named = [key for key in (*NAME_FIELDS, "draft_model") if data and data.get(key) == exc.name]
        if named:
            body["field"] = named[0]
    elif isinstance(exc, InputError) and exc.field:
        body["field"] = exc.field
    return json_response(body, status_code)


class BodyTooLarge(InputError):
    """A request body over MAX_BODY_BYTES (answered 413, found while it streams in)."""


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The body, read chunk by chunk and refused as soon as it passes `limit` bytes.

    A declared Content-Length over the limit is refused before anything is read; a chunked or
    lying body is cut off the moment it passes the limit, so memory never holds more than it.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"body is too large ({int(declared):,} bytes, at most {limit:,})")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(f"body is too large (over {limit:,} bytes)")
    return bytes(body)


async def request_data(request: Request) -> Data:
    """The query string (GET) or the JSON object in the body (POST), through the guarded door:
    UTF-8, nested at most `guard.MAX_NESTING_DEPTH` deep (10,000 brackets never reach the parser)."""
    if request.method == "GET":
        return dict(request.query_params)
    raw = await read_body(request)
    if not raw.strip():
        return {}
    try:
        text = decode_text(raw, "body", door="web", what="a UTF-8 JSON object")
    except InputError as exc:
        raise InputError(f"body is not valid JSON: {exc}", field="body", door="web") from None
    check_nesting(text, "body", door="web")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"body is not valid JSON: {str(exc)[:200]}", field="body", door="web") from None
    if not isinstance(data, dict):
        raise InputError(f"body must be a JSON object, got {type(data).__name__}", field="body", door="web")
    return data


def endpoint(handler: Handler, *, threaded: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Parse the request, call `handler(data, request)`, map user errors to 422 JSON.

    `threaded` runs the handler in the thread pool: a simulation taking a second or two then leaves
    the event loop free to answer other requests meanwhile.
    """

    async def route(request: Request) -> Response:
        data: Data | None = None
        try:
            data = canonical(await request_data(request), aliases_for(request.url.path))  # the CLI's names too
            result = await run_in_threadpool(handler, data, request) if threaded else handler(data, request)
        except BodyTooLarge as exc:
            return json_response({"error": str(exc)}, 413)
        except TokometerError as exc:
            return error_response(exc, data)
        return result if isinstance(result, Response) else json_response(result)

    return route


def _estimate(data: Data, request: Request) -> Any:
    return compute.estimate_dict(setup_kwargs(data))


def _curve(data: Data, request: Request) -> Any:
    kwargs = setup_kwargs(data, extra=("axis", "values"))
    values = number_list("values", data["values"], integer=True) if data.get("values") else None
    return compute.curve(kwargs, text("axis", data.get("axis") or "context"), values)


def one_device(kwargs: Data, path: str) -> Data:
    """The roofline and MBU/MFU divide by one device's datasheet numbers: no levers there (yet)."""
    for key in LEVER_FIELDS:
        if key in kwargs:
            raise InputError(
                f"{key} is not taken by {path}: it compares one device's steps with its datasheet", field=key
            )
    return kwargs


def _roofline(data: Data, request: Request) -> Any:
    kwargs = one_device(setup_kwargs(data, extra=("batches",)), "/api/roofline")
    kwargs.pop("batch", None)
    batches = number_list("batches", data["batches"], integer=True) if data.get("batches") else None
    return roofline(batches, **kwargs).to_dict()


def _utilisation(data: Data, request: Request) -> Any:
    kwargs = one_device(setup_kwargs(data, extra=("measured_decode_tok_s", "measured_prefill_tok_s")), "/api/utilisation")
    measured = optional_number(data, "measured_decode_tok_s")
    if measured is None:
        raise InputError(
            "measured_decode_tok_s is required: the decode speed you measured, in tok/s", field="measured_decode_tok_s"
        )
    return compute.utilisation(kwargs, measured, optional_number(data, "measured_prefill_tok_s"))


def _latency(data: Data, request: Request) -> Any:
    unknown = sorted(set(data) - {"ttft_ms", "output_tokens", "tok_s"})
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; expected ttft_ms, output_tokens, tok_s")
    ttft_ms, tok_s = optional_number(data, "ttft_ms"), optional_number(data, "tok_s")
    if ttft_ms is None or tok_s is None:
        missing = "ttft_ms" if ttft_ms is None else "tok_s"
        raise InputError(f"{missing} is required", field=missing)
    output = optional_number(data, "output_tokens", integer=True)
    more = {} if output is None else {"output_tokens": int(output)}
    return latency_at_rate(ttft_ms, tok_s, **more).to_dict()


def _panorama(data: Data, request: Request) -> Any:
    return panorama(**setup_kwargs(data)).to_dict()


def _feel(data: Data, request: Request) -> Any:
    unknown = sorted(set(data) - {"rates", "seconds", "lang", "text"})
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; expected rates, seconds, lang, text")
    lang = text("lang", data.get("lang") or "en")
    given = data.get("text")
    if given is not None and not isinstance(given, str):
        raise InputError(f"text must be a string, got {given!r}")
    seconds = optional_number(data, "seconds")
    plan = feel(data.get("rates") or DEFAULT_RATES_TOK_S, text=given, lang=lang, seconds=10.0 if seconds is None else seconds)
    return plan.with_tokens()


def _simulate(data: Data, request: Request) -> Any:
    return serving.simulate_dict(data)


def _plan(data: Data, request: Request) -> Any:
    return serving.plan_dict(data)


def _frontier(data: Data, request: Request) -> Any:
    return serving.frontier_dict(data)


def _run_serving(data: Data, request: Request) -> Any:
    """A stored `bench --rate/--concurrency` run with the simulated curve for its workload."""
    run_id = request.path_params["run_id"]
    run = compute.run_detail(run_id, requests_limit=0)
    if run is None:
        return json_response({"error": f"no stored run {run_id[:40]!r}"}, 404)
    return serving.run_overlay(run)


def _catalog(kind: str) -> Handler:
    def handler(data: Data, request: Request) -> Any:
        return compute.catalog_rows(kind)

    return handler


def _hardware_show(data: Data, request: Request) -> Any:
    try:
        return compute.hardware_entry(request.path_params["name"])
    except UnknownEntryError as exc:
        return error_response(exc, status_code=404)


def _runs(data: Data, request: Request) -> Any:
    limit = optional_number(data, "limit", integer=True)  # within API_FIELDS["limit"]
    result = compute.runs(int(limit or 50))
    return {**result, "bench_urls": list(request.app.state.bench_urls)}


def _run_detail(data: Data, request: Request) -> Any:
    """One run with a page of its requests: `?requests_limit=` (default 200, at most 1000) and `?requests_offset=`."""
    limit = optional_number(data, "requests_limit", integer=True)  # both within their API_FIELDS range
    offset = optional_number(data, "requests_offset", integer=True)
    run_id = request.path_params["run_id"]
    run = compute.run_detail(run_id, requests_limit=int(200 if limit is None else limit), requests_offset=int(offset or 0))
    if run is None:
        return json_response({"error": f"no stored run {run_id[:40]!r}"}, 404)
    return run


def _meta(data: Data, request: Request) -> Any:
    return compute.meta(tuple(request.app.state.bench_urls))


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def host_name(header: str) -> str:
    """The name in a Host header, without the port: `[::1]:8765` -> `::1`, `a.b:80` -> `a.b`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str, names: Sequence[str], *, ip_literals: bool) -> bool:
    """DNS rebinding guard: the page's Host must be one of `names`, or (off loopback) an IP literal,
    which no attacker's DNS can point at this machine."""
    name = host_name(header)
    if not name:
        return False
    if name in {n.lower() for n in names}:
        return True
    if ip_literals:
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


class HostCheck:
    """Answers 400 to any request whose Host header is not allowed (see `host_allowed`)."""

    def __init__(self, app: ASGIApp, names: Sequence[str], ip_literals: bool) -> None:
        self.app = app
        self.names = tuple(names)
        self.ip_literals = ip_literals

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
            if not host_allowed(header, self.names, ip_literals=self.ip_literals):
                await Response("invalid host header", status_code=400, media_type="text/plain")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _openapi(data: Data, request: Request) -> Any:
    """The API as OpenAPI 3.1, from the same field definitions the handlers check with (`web.openapi`)."""
    from tokometer.web.openapi import openapi

    return openapi()


def _schema(data: Data, request: Request) -> Any:
    """The estimate form's fields, from `EstimateRequest` (names, kinds, defaults, flags, help)."""
    return {"fields": request_schema()}


class SecurityHeaders:
    """Adds a strict content security policy and no-sniff/no-referrer headers to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(
    bench_urls: Sequence[str] = (), allowed_hosts: Sequence[str] | None = None, *, allow_ip_literals: bool = False
) -> Starlette:
    """The ASGI app. `allowed_hosts` (and, off loopback, `allow_ip_literals`) guard against DNS rebinding."""
    shell = (STATIC_DIR / "index.html").read_text(encoding="utf-8")

    async def page(request: Request) -> Response:
        return HTMLResponse(shell, headers={"cache-control": "no-cache"})

    async def favicon(request: Request) -> Response:
        return RedirectResponse("/static/favicon.svg", status_code=308)

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        message = "method not allowed" if status == 405 else "not found"
        if request.url.path.startswith("/api/"):
            return json_response({"error": f"{message}: {request.method} {request.url.path}"}, status)
        return HTMLResponse(f"<!doctype html><title>tokometer</title><p>{message} - <a href='/'>tokometer</a></p>", status)

    async def server_error(request: Request, exc: Exception) -> Response:
        """Our own bug (a client's input never lands here): logged with its traceback, answered in one line."""
        logging.getLogger("tokometer.web").error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        return json_response({"error": f"internal error: {type(exc).__name__}"}, 500)

    both = ["GET", "POST"]
    routes = [
        Route("/", page),
        *[Route(f"/{name}", page) for name in PAGES],
        Route("/favicon.ico", favicon),
        Route("/api/meta", endpoint(_meta)),
        Route("/api/schema", endpoint(_schema)),
        Route("/api/openapi.json", endpoint(_openapi)),
        Route("/api/estimate", endpoint(_estimate), methods=both),
        Route("/api/curve", endpoint(_curve), methods=both),
        Route("/api/roofline", endpoint(_roofline), methods=both),
        Route("/api/utilisation", endpoint(_utilisation), methods=both),
        Route("/api/utilization", endpoint(_utilisation), methods=both),
        Route("/api/latency", endpoint(_latency), methods=both),
        Route("/api/panorama", endpoint(_panorama), methods=both),
        Route("/api/feel", endpoint(_feel), methods=both),
        Route("/api/simulate", endpoint(_simulate, threaded=True), methods=both),
        Route("/api/plan", endpoint(_plan, threaded=True), methods=both),
        Route("/api/frontier", endpoint(_frontier, threaded=True), methods=both),
        *[Route(f"/api/{kind}", endpoint(_catalog(kind))) for kind in ("hardware", "models", "quants", "engines")],
        Route("/api/hardware/{name}", endpoint(_hardware_show)),
        Route("/api/runs", endpoint(_runs)),
        Route("/api/runs/{run_id}", endpoint(_run_detail)),
        Route("/api/runs/{run_id}/serving", endpoint(_run_serving, threaded=True)),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if allowed_hosts is not None:
        middleware.append(Middleware(HostCheck, names=list(allowed_hosts), ip_literals=allow_ip_literals))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={404: not_found, 405: not_found, Exception: server_error},
    )
    app.state.bench_urls = tuple(bench_urls)
    return app
