"""The Serving page's speculative decoding and shared-prefix fields in a real headless Chromium, at
phone width (390 px) in English and French: the fields carry their labels in the page's language,
a link that sets them opens their section, the result shows the API's prefix hit share and the
speculation line, the plan's setups speculate as the page's deployment does, and nothing scrolls
sideways."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from test_web_phone import SIDEWAYS_PX
from test_web_serving_browser import SHOTS, open_page
from tokometer.web.app import STATIC_DIR, create_app
from web_helpers import start_serve, stop

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

OPTIONS = {"spec_method": "eagle3", "spec_tokens": 3, "system_prompt": 2000, "turns": 2}
QUERY = ("model=llama-3.1-8b&quant=bf16&hw=h100-sxm&prompt_tokens=1000&output_tokens=200&slo_ttft_ms=500&slo_tpot_ms=50&"
         + "&".join(f"{k}={v}" for k, v in OPTIONS.items()))
API_BODY = {"model": "llama-3.1-8b", "quant": "bf16", "hw": "h100-sxm", "prompt_tokens": 1000, "output_tokens": 200,
            "slo_ttft_ms": 500, "slo_tpot_ms": 50, **OPTIONS}
FIELDS = ("spec_method", "spec_tokens", "spec_acceptance", "draft_model", "system_prompt", "system_prompt_share",
          "system_prompts", "turns")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc, base = start_serve(str(tmp_path_factory.mktemp("serving-options-home")), log=True)
    yield base
    stop(proc)


@pytest.fixture(scope="module")
def api() -> dict[str, Any]:
    return TestClient(create_app()).post("/api/simulate", json=API_BODY).json()  # type: ignore[no-any-return]


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_options_are_on_the_page_at_phone_width(browser: Any, server: str, api: dict[str, Any], lang: str) -> None:
    strings = json.loads((STATIC_DIR / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    page, errors = open_page(browser, server, f"/serving?{QUERY}&lang={lang}", 390, 844)
    assert page.locator("[data-testid=advanced]").first.evaluate("d => d.open")  # the link sets its fields: it opens
    for name in FIELDS:
        box = page.locator(f"[data-field={name}]")
        assert box.count() == 1 and box.is_visible(), name
        assert box.locator("label").inner_text().startswith(strings[f"f.{name}"]), name
    assert page.locator("select[name=spec_method]").input_value() == "eagle3"
    assert page.locator("input[name=system_prompt]").input_value() == "2000"
    hit = page.locator("[data-testid=serve-prefix-hit]")
    assert float(hit.get_attribute("data-value")) == api["chosen"]["prefix_hit_share"] > 0
    spec = page.locator("[data-testid=serve-spec]")
    assert float(spec.get_attribute("data-value")) == api["deployment"]["speculation"]["tokens_per_pass"]
    assert strings["spec.eagle3"] in spec.inner_text()
    assert page.get_by_text(strings["serve.prefixHit"]).count() == 1
    marked = page.locator("[data-testid=plan-table] td[data-spec=eagle3]")  # the plan speculates as the deployment does
    assert marked.count() >= 1 and strings["spec.eagle3"] in marked.first.inner_text()
    assert page.evaluate(SIDEWAYS_PX) <= 1
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"serving-options-phone-{lang}.png"), full_page=True)
    assert errors == []
    page.context.close()


def test_a_bad_option_is_explained_on_its_field(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    page = context.new_page()
    page.goto(server + "/serving?model=llama-3.1-8b&quant=bf16&hw=h100-sxm&spec_method=ngram&spec_tokens=40")
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    box = page.locator("[data-field=spec_tokens]")
    box.locator("input").fill("40")
    page.wait_for_function("() => document.querySelector('[data-field=spec_tokens]').classList.contains('invalid')", timeout=15_000)
    assert "16" in box.locator(".msg").inner_text()
    context.close()
