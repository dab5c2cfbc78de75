"""The Serving page in a real headless Chromium, at 1280 px in English and 390 px in French: the
numbers it shows are the API's (hence the CLI's, see test_web_serving.py), the knee is marked, the
slider moves the chosen rate, the plan table lists priced setups, and nothing scrolls sideways.
Screenshots land in artifacts/screenshots/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from test_web_phone import MIN_CHART_FONT_PX, SIDEWAYS_PX
from tokometer.web.app import create_app
from web_helpers import start_serve, stop

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
QUERY = "model=llama-3.1-8b&quant=bf16&hw=h100-sxm&prompt_tokens=1000&output_tokens=200&slo_ttft_ms=500&slo_tpot_ms=50"
API_BODY = {"model": "llama-3.1-8b", "quant": "bf16", "hw": "h100-sxm", "prompt_tokens": 1000, "output_tokens": 200,
            "slo_ttft_ms": 500, "slo_tpot_ms": 50}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, base = start_serve(str(tmp_path_factory.mktemp("serving-home")), log=True)
    yield base
    stop(proc)


@pytest.fixture(scope="module")
def api() -> dict[str, Any]:
    return TestClient(create_app()).post("/api/simulate", json=API_BODY).json()  # type: ignore[no-any-return]


def open_page(browser: Any, base: str, path: str, width: int, height: int) -> tuple[Any, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": height}, locale="en-US")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base + path)
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    page.wait_for_selector("[data-testid=result][data-ready] [data-testid=plan-table]", timeout=30_000)
    return page, errors


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def value(page: Any, testid: str) -> float:
    return float(page.locator(f"[data-testid={testid}]").first.get_attribute("data-value"))


def test_the_page_shows_the_apis_numbers_and_the_plan(browser: Any, server: str, api: dict[str, Any]) -> None:
    page, errors = open_page(browser, server, f"/serving?{QUERY}", 1280, 900)
    assert value(page, "knee") == api["knee_rate_per_s"]
    assert value(page, "serve-rate") == api["chosen"]["rate_per_s"]  # no rate given: the knee
    assert value(page, "serve-req-s") == api["chosen"]["req_per_s"]
    assert value(page, "serve-ttft-p99") == api["chosen"]["ttft_s"]["p99"]
    chart = page.locator("[data-testid=serving-chart] svg.chart")
    assert chart.locator("polyline[data-series=ttft-p99]").count() == 1
    assert chart.locator("polyline[data-series=slo-ttft]").count() == 1  # the SLO line is drawn
    assert chart.locator("text.ptlabel", has_text="knee").count() == 1
    rows = page.locator("[data-testid=plan-table] tbody tr")
    assert rows.count() >= 1
    costs = [float(c) for c in page.locator("[data-testid=plan-table] tbody td[data-value]").evaluate_all("els => els.map(e => e.dataset.value)")]
    assert costs and all(c > 0 for c in costs)
    assert page.evaluate(SIDEWAYS_PX) <= 1
    shot(page, "serving-desktop-en")
    assert errors == []
    page.context.close()


def test_the_slider_moves_the_chosen_rate(browser: Any, server: str, api: dict[str, Any]) -> None:
    page, errors = open_page(browser, server, f"/serving?{QUERY}", 1280, 900)
    before = page.locator("[data-testid=result]").get_attribute("data-ready")
    top = max(p["rate_per_s"] for p in api["points"])
    page.evaluate(
        "(v) => { const s = document.querySelector('[data-testid=rate-slider]'); s.value = String(v);"
        " s.dispatchEvent(new Event('input', { bubbles: true })); }", top)
    page.wait_for_function("(b) => document.querySelector('[data-testid=result]').dataset.ready !== b", arg=before, timeout=30_000)
    page.wait_for_selector("[data-testid=result][data-ready] [data-testid=serve-rate]")
    assert value(page, "serve-rate") == pytest.approx(top, rel=1e-2)
    assert page.locator("#f-rate_per_s").input_value() != ""
    assert "rate_per_s=" in page.url  # the chosen rate travels with a shared link
    # past saturation the queue grows: p99 TTFT is far above the knee's
    assert value(page, "serve-ttft-p99") > api["chosen"]["ttft_s"]["p99"]
    assert errors == []
    page.context.close()


def test_bad_rate_is_explained_on_its_field(browser: Any, server: str) -> None:
    page, errors = open_page(browser, server, f"/serving?{QUERY}", 1280, 900)
    page.fill("#f-rate_per_s", "-3")
    page.wait_for_selector("[data-field=rate_per_s].invalid", timeout=5_000)
    assert page.locator("[data-field=rate_per_s] .msg").inner_text().strip() != ""
    page.context.close()


def test_the_page_reads_on_a_phone_in_french(browser: Any, server: str) -> None:
    page, errors = open_page(browser, server, f"/serving?{QUERY}&lang=fr", 390, 844)
    assert page.locator("h1").inner_text() == "Servir beaucoup d'utilisateurs"
    assert page.locator("#nav a[data-page=serving][aria-current=page]").inner_text() == "Service"
    smallest = page.evaluate(MIN_CHART_FONT_PX)
    assert smallest is not None and smallest >= 11, f"chart text renders at {smallest:.1f} px on a 390 px screen"
    assert page.evaluate(SIDEWAYS_PX) <= 1
    binding = page.locator("[data-testid=plan-table] tbody tr td.wrap").first.inner_text()
    assert "objectif" in binding and "objective" not in binding
    shot(page, "serving-phone-fr")
    assert errors == []
    page.context.close()


def test_the_frontier_is_drawn_on_demand_in_both_languages(browser: Any, server: str) -> None:
    body = {k: API_BODY[k] for k in ("model", "quant", "hw", "prompt_tokens", "output_tokens")}
    want = TestClient(create_app()).post("/api/frontier", json=body).json()
    for lang, width, title in (("en", 1280, "frontier"), ("fr", 390, "frontière")):
        page, errors = open_page(browser, server, f"/serving?{QUERY}&lang={lang}", width, 900)
        assert page.locator("[data-testid=frontier-table]").count() == 0  # drawn only when asked
        assert title in page.locator("h3.sec").last.inner_text().lower()
        page.click("[data-testid=frontier-draw]")
        page.wait_for_selector("[data-testid=frontier-table] tbody tr", timeout=60_000)
        cells = page.locator("[data-testid=frontier-table] tbody td[data-value]").evaluate_all("els => els.map(e => Number(e.dataset.value))")
        assert cells == [v for p in want["frontier"] for v in (p["tok_s_per_user"], p["tok_s_per_gpu"])]
        chart = page.locator("[data-testid=frontier-chart] svg.chart")
        assert chart.locator("polyline[data-series=frontier]").count() == 1
        assert page.evaluate(SIDEWAYS_PX) <= 1
        shot(page, f"serving-frontier-{lang}")
        assert errors == []
        page.context.close()


def test_a_rate_run_is_drawn_on_the_simulated_curve(browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from test_web_browser import thread_server
    from test_web_serving import OverlayStore

    module = types.ModuleType("tokometer.store")
    module.open_store = lambda path=None: OverlayStore()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tokometer.store", module)
    with thread_server(create_app()) as base:
        for run_id, name in ((21, "rate"), (22, "concurrency")):
            context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
            page.goto(f"{base}/runs?run={run_id}")
            page.wait_for_selector("[data-testid=run-overlay] svg.chart", timeout=30_000)
            chart = page.locator("[data-testid=run-overlay] svg.chart")
            assert chart.locator("polyline[data-series=ttft-p99]").count() == 1
            assert chart.locator("circle.pt.p-measured").count() == 2  # both measured levels
            assert chart.locator("text.ptlabel", has_text=f"{name}=").count() >= 1
            if name == "concurrency":
                assert chart.locator("polyline[data-series=closed-ttft-p99]").count() == 1
                assert "ollama" in page.locator("[data-testid=run-overlay] .warnings").inner_text()
            page.locator("[data-testid=run-overlay]").screenshot(path=str(SHOTS / f"runs-overlay-{name}.png"))
            assert errors == []
            context.close()
