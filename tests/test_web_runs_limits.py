"""`tokometer serve` limits: bodies refused while they stream in, the Host check on every bind
address, 404 for odd run ids (web and CLI), large runs answered a page at a time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import Request
from starlette.testclient import TestClient

from bench_fixtures import bench_home, run_cli  # noqa: F401
from tokometer.store import open_store
from tokometer.web.app import (
    MAX_BODY_BYTES,
    BodyTooLarge,
    create_app,
    host_allowed,
    host_name,
    read_body,
)


def _endless_request(chunk_bytes: int, declared: int | None = None) -> tuple[Request, list[int]]:
    """A POST whose body never ends; `sent` counts the chunks the app pulled."""
    sent: list[int] = []

    async def receive() -> dict[str, Any]:
        sent.append(chunk_bytes)
        return {"type": "http.request", "body": b"x" * chunk_bytes, "more_body": True}

    headers = [(b"content-length", str(declared).encode())] if declared is not None else []
    scope = {"type": "http", "method": "POST", "path": "/api/estimate", "headers": headers, "query_string": b""}
    return Request(scope, receive), sent


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit() -> None:
    request, sent = _endless_request(16 * 1024)
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(request))
    assert sum(sent) == MAX_BODY_BYTES + 16 * 1024  # one chunk past the limit, never the rest


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    request, sent = _endless_request(16 * 1024, declared=10**9)
    with pytest.raises(BodyTooLarge, match="1,000,000,000 bytes"):
        asyncio.run(read_body(request))
    assert sent == []


def test_an_oversized_post_is_413() -> None:
    client = TestClient(create_app())
    response = client.post("/api/estimate", content=b"{" + b" " * (MAX_BODY_BYTES + 10) + b"}")
    assert response.status_code == 413 and "too large" in response.json()["error"]


@pytest.mark.parametrize(
    ("header", "name"),
    [("[::1]:8765", "::1"), ("127.0.0.1:80", "127.0.0.1"), ("LocalHost", "localhost"), ("::1", "::1"), ("[::1", "")],
)
def test_host_names_are_read_with_and_without_ports(header: str, name: str) -> None:
    assert host_name(header) == name


def test_loopback_binds_answer_only_loopback_names_ipv6_included() -> None:
    names = ("localhost", "127.0.0.1", "::1")
    assert host_allowed("[::1]:8765", names, ip_literals=False)
    assert not host_allowed("evil.example", names, ip_literals=False)
    assert not host_allowed("10.0.0.5:8765", names, ip_literals=False)
    app = create_app(allowed_hosts=list(names))
    assert TestClient(app, base_url="http://[::1]:8765").get("/api/meta").status_code == 200
    assert TestClient(app, base_url="http://rebound.example:8765").get("/api/meta").status_code == 400


def test_other_binds_answer_ip_literals_and_listed_names_never_other_names() -> None:
    app = create_app(allowed_hosts=["localhost", "myhost"], allow_ip_literals=True)
    assert TestClient(app, base_url="http://192.168.1.20:8765").get("/api/meta").status_code == 200
    assert TestClient(app, base_url="http://[fe80::1]:8765").get("/api/meta").status_code == 200
    assert TestClient(app, base_url="http://myhost:8765").get("/api/meta").status_code == 200
    assert TestClient(app, base_url="http://attacker.example").get("/api/meta").status_code == 400


def _stored_run(n_requests: int) -> int:
    requests = [{"seq": i, "phase": "decode", "ok": True, "t0_s": float(i), "event_times_s": [0.1, 0.2]} for i in range(n_requests)]
    with open_store() as store:
        return store.save_run({"started_at": "2025-01-01T00:00:00+00:00", "status": "complete", "mode": "speed", "requests": requests})


@pytest.mark.parametrize("odd", ["abc", "0", "-1", "99999999999999999999999", "1.5", "²", "%20", "1e3"])
def test_odd_run_ids_are_404_on_the_web(odd: str) -> None:
    _stored_run(1)
    response = TestClient(create_app()).get(f"/api/runs/{odd}")
    assert response.status_code == 404 and "no stored run" in response.json()["error"]


@pytest.mark.parametrize("odd", ["99999999999999999999999", "0", "7"])
def test_odd_run_ids_are_one_line_on_the_cli(odd: str) -> None:
    for command in (["runs", "show", odd], ["runs", "delete", odd, "--yes"]):
        code, out, err = run_cli(command)
        assert code == 2 and "Traceback" not in err + out
        assert err.startswith("error: no run ") and len(err.strip().splitlines()) == 1


def test_a_large_run_is_answered_a_page_at_a_time() -> None:
    run_id = _stored_run(450)
    client = TestClient(create_app())
    first = client.get(f"/api/runs/{run_id}").json()
    assert first["requests_total"] == 450 and len(first["requests"]) == 200
    last = client.get(f"/api/runs/{run_id}", params={"requests_offset": "400", "requests_limit": "100"}).json()
    assert [r["seq"] for r in last["requests"]] == list(range(400, 450))
    assert client.get(f"/api/runs/{run_id}", params={"requests_limit": "5000"}).status_code == 422
    assert client.get(f"/api/runs/{run_id}", params={"requests_offset": "-1"}).status_code == 422
