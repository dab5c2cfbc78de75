"""The web app in a real headless Chromium (Debian's `chromium`, driven by Playwright).

`tokometer serve` runs in a subprocess on a free port. The tests check that every page loads
without console errors, that a calculation shows the CLI's numbers, that the language choice
persists, that the speed-feel lanes stream at the asked rates, and that bad input is explained.
Screenshots of every page land in artifacts/screenshots/. Without Chromium the tests skip,
except under CI=true, where they fail: scripts/ci/browser.sh installs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tokometer.report.text import num
from tokometer.web.app import PAGES, create_app
from web_helpers import fake_store_module, free_port, start_serve, stop

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("web-home")


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[str]:
    try:
        proc, base = start_serve(str(home), "--bench-url", "http://127.0.0.1:9/v1", log=True)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield base
    stop(proc)


@dataclass
class Tab:
    """A page in a fresh browser context (its own localStorage), with its console errors."""

    page: Any
    base: str
    errors: list[str] = field(default_factory=list)

    def open(self, path: str) -> None:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("body[data-ready=true]", timeout=15_000)

    def value(self, testid: str) -> float:
        return float(self.page.get_attribute(f"[data-testid={testid}]", "data-value"))

    def text(self, selector: str) -> str:
        return str(self.page.inner_text(selector)).strip()

    def shot(self, name: str, full_page: bool = True) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def new_tab(browser: Any, base: str, **options: Any) -> Tab:
    context = browser.new_context(viewport=options.pop("viewport", {"width": 1280, "height": 900}), locale="en-US", **options)
    page = context.new_page()
    tab = Tab(page, base)
    page.on("console", lambda message: tab.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: tab.errors.append(str(error)))
    return tab


@pytest.fixture
def tab(browser: Any, server: str) -> Iterator[Tab]:
    t = new_tab(browser, server)
    yield t
    t.page.context.close()


def cli_json(home: Path, *args: str) -> Any:
    env = {**os.environ, "TOKOMETER_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "tokometer", *args, "--json"], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def wait_value(tab: Tab, testid: str, expected: float) -> None:
    tab.page.wait_for_function(
        "([id, want]) => { const el = document.querySelector(`[data-testid=${id}]`);"
        " return el && Math.abs(Number(el.dataset.value) - want) <= 1e-9 * Math.abs(want); }",
        arg=[testid, expected],
        timeout=10_000,
    )


@pytest.mark.parametrize("page_name", PAGES)
def test_each_page_loads_without_console_errors(tab: Tab, page_name: str) -> None:
    tab.open(f"/{page_name}")
    assert tab.page.locator("h1").count() == 1
    assert tab.page.locator(f"#nav a[data-page={page_name}][aria-current=page]").count() == 1
    assert tab.page.locator("[data-testid=error]").count() == 0
    if page_name == "feel":
        tab.page.wait_for_timeout(1500)
    tab.shot(page_name, full_page=page_name != "hardware")
    assert tab.errors == []


@pytest.mark.parametrize("page_name", ["throughput", "hardware", "feel", "memory"])
def test_pages_fit_a_phone(browser: Any, server: str, page_name: str) -> None:
    phone = new_tab(browser, server, viewport={"width": 390, "height": 844}, device_scale_factor=2)
    phone.open(f"/{page_name}?lang=fr")
    if page_name == "feel":
        phone.page.wait_for_timeout(1200)
    overflow = phone.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the page scrolls sideways on a phone"
    phone.shot(f"{page_name}-phone-fr", full_page=page_name != "hardware")
    assert phone.errors == []
    phone.page.context.close()


def test_throughput_shows_the_cli_numbers(tab: Tab, home: Path) -> None:
    expected = cli_json(home, "estimate", "--params", "70", "--bits", "4", "--bandwidth", "3350")["decode"]
    tab.open("/throughput?mode=numbers")  # the page starts on the catalog setup, as the CLI does
    tab.page.fill("#f-params_b", "70")
    tab.page.fill("#f-bits", "4")
    tab.page.fill("#f-bandwidth_gb_per_s", "3350")
    tab.page.click("[data-testid=calculate]")
    wait_value(tab, "ceiling", expected["ceiling_tok_s"])
    wait_value(tab, "estimate", expected["estimate_tok_s"])
    assert tab.text("[data-testid=ceiling]") == num(expected["ceiling_tok_s"])  # 95.7, as the CLI prints it
    assert tab.text("[data-testid=estimate]") == num(expected["estimate_tok_s"])
    assert "bits=4" in tab.page.url and "params_b=70" in tab.page.url
    tab.shot("throughput-70b-4bit")

    tab.page.reload()  # the URL restores inputs and result
    tab.page.wait_for_selector("body[data-ready=true]")
    assert tab.page.input_value("#f-bits") == "4"
    assert tab.value("ceiling") == pytest.approx(expected["ceiling_tok_s"], rel=1e-12)
    assert tab.errors == []


def test_a_shared_catalog_url_restores_inputs_and_result(tab: Tab, home: Path) -> None:
    expected = cli_json(home, "estimate", "qwen3-8b", "--hw", "h100-sxm", "-q", "q8-0", "--context", "4096")["decode"]
    tab.open("/throughput?mode=catalog&model=qwen3-8b&quant=q8-0&hw=h100-sxm&context_tokens=4096")
    assert tab.page.input_value("#f-model") == "qwen3-8b"
    assert tab.page.input_value("#f-quant") == "q8-0"
    assert tab.value("ceiling") == pytest.approx(expected["ceiling_tok_s"], rel=1e-12)
    assert tab.value("estimate") == pytest.approx(expected["estimate_tok_s"], rel=1e-12)


def test_an_advanced_option_shows_the_cli_numbers_and_survives_a_reload(tab: Tab, home: Path) -> None:
    argv = ["llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8"]
    plain = cli_json(home, "estimate", *argv)["decode"]
    expected = cli_json(home, "estimate", *argv, "--tp", "2", "--link", "nvlink")
    tab.open("/throughput?mode=catalog&model=llama-3.1-70b&quant=fp8&hw=h100-sxm")
    advanced = tab.page.locator("[data-testid=advanced]")
    assert advanced.get_attribute("open") is None  # collapsed by default
    assert tab.page.locator("[data-testid=parallel]").count() == 0
    wait_value(tab, "estimate", plain["estimate_tok_s"])

    tab.page.click("[data-testid=advanced] summary")
    tab.page.wait_for_function("() => location.search.includes('advanced=1')")  # even the open section is in the URL
    tab.page.fill("#f-tp", "2")
    tab.page.fill("#f-link", "nvlink")
    tab.page.click("[data-testid=calculate]")
    wait_value(tab, "estimate", expected["decode"]["estimate_tok_s"])
    wait_value(tab, "ceiling", expected["decode"]["ceiling_tok_s"])
    assert tab.text("[data-testid=estimate]") == num(expected["decode"]["estimate_tok_s"])
    assert tab.text("[data-testid=ceiling]") == num(expected["decode"]["ceiling_tok_s"])
    parallel = expected["parallel"]
    assert tab.value("parallel-speedup") == pytest.approx(parallel["speedup"], rel=1e-12)
    assert tab.value("single-device") == pytest.approx(parallel["single_device_tok_s"], rel=1e-12)
    assert "450 GB/s" in tab.text("[data-testid=parallel]")  # the NVLink of an H100 SXM
    assert "2 × NVIDIA H100" in tab.text(".setup")
    assert "tp=2" in tab.page.url and "link=nvlink" in tab.page.url
    assert tab.text("[data-testid=advanced-count]") == "(2 set)"
    tab.page.evaluate("window.scrollTo(0, 0)")
    tab.shot("throughput-advanced-tp2")

    tab.page.reload()  # the URL restores the advanced inputs, the open section and the result
    tab.page.wait_for_selector("body[data-ready=true]")
    assert tab.page.input_value("#f-tp") == "2"
    assert tab.page.input_value("#f-link") == "nvlink"
    assert advanced.get_attribute("open") is not None
    assert tab.value("estimate") == pytest.approx(expected["decode"]["estimate_tok_s"], rel=1e-12)
    assert tab.value("ceiling") == pytest.approx(expected["decode"]["ceiling_tok_s"], rel=1e-12)
    assert tab.value("parallel-speedup") == pytest.approx(parallel["speedup"], rel=1e-12)

    tab.page.fill("#f-tp", "")  # cleared: back to one device, the section stays open
    tab.page.fill("#f-link", "")
    tab.page.click("[data-testid=calculate]")
    wait_value(tab, "estimate", plain["estimate_tok_s"])
    assert tab.page.locator("[data-testid=parallel]").count() == 0
    assert "tp=" not in tab.page.url and "advanced=1" in tab.page.url
    tab.page.click("[data-testid=advanced] summary")
    tab.page.wait_for_function("() => !location.search.includes('advanced=')")
    assert tab.errors == []


def test_shared_urls_with_a_draft_or_offloaded_layers(tab: Tab, home: Path) -> None:
    expected = cli_json(home, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4-k-m", "--draft", "llama-3.2-1b", "--acceptance", "0.8")
    tab.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&draft=llama-3.2-1b&acceptance=0.8")
    assert tab.page.locator("[data-testid=advanced]").get_attribute("open") is not None  # a set lever opens it
    spec = expected["speculative"]
    assert tab.value("estimate") == pytest.approx(expected["decode"]["estimate_tok_s"], rel=1e-12)
    assert tab.value("spec-estimate") == pytest.approx(spec["tok_s"], rel=1e-12)
    assert tab.value("spec-ceiling") == pytest.approx(spec["ceiling_tok_s"], rel=1e-12)
    assert tab.value("spec-speedup") == pytest.approx(spec["speedup"], rel=1e-12)
    tab.shot("throughput-advanced-draft")

    argv = ["llama-3.1-70b", "--hw", "rtx-4090", "-q", "q4-k-m", "--gpu-layers", "0.3", "--cpu-hw", "ddr5-6000-dual-channel"]
    expected = cli_json(home, "estimate", *argv)
    tab.open("/throughput?mode=catalog&model=llama-3.1-70b&quant=q4-k-m&hw=rtx-4090&gpu_layers=0.3&cpu_hw=ddr5-6000-dual-channel&lang=fr")
    assert tab.page.input_value("#f-cpu_hw") == "ddr5-6000-dual-channel"
    off = expected["offload"]
    assert tab.value("estimate") == pytest.approx(expected["decode"]["estimate_tok_s"], rel=1e-12)
    assert tab.value("offload-split") == off["gpu_layers"] == 24
    assert tab.page.get_attribute("[data-testid=offload-split]", "data-cpu") == str(off["cpu_layers"])
    assert tab.value("offload-gpu-only") == pytest.approx(off["gpu_only_tok_s"], rel=1e-12)
    assert tab.page.locator("[data-testid=formula]").count() == 0  # BW / M is not the ceiling of a split model
    assert "24 couches sur 80" in tab.text("[data-testid=offload]")
    tab.shot("throughput-advanced-offload-fr")
    assert tab.errors == []


def test_a_shared_url_with_moe_experts_offloaded(tab: Tab, home: Path) -> None:
    argv = ["gpt-oss-120b", "--hw", "rtx-4090", "-q", "mxfp4", "--offload-experts", "all", "--cpu-hw", "ddr5-6000-dual-channel"]
    expected = cli_json(home, "estimate", *argv)
    tab.open("/throughput?mode=catalog&model=gpt-oss-120b&quant=mxfp4&hw=rtx-4090&offload_experts=all&cpu_hw=ddr5-6000-dual-channel")
    assert tab.page.input_value("#f-offload_experts") == "all"
    assert tab.value("estimate") == pytest.approx(expected["decode"]["estimate_tok_s"], rel=1e-12)
    assert "experts of 36 of 36 layers" in tab.text("[data-testid=offload]")
    assert tab.errors == []
    tab.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&offload_experts=all")
    assert "dense" in tab.text("[data-field=offload_experts] .msg")  # the server's 422, on its field


def test_bad_advanced_input_is_explained_on_its_field(tab: Tab) -> None:
    tab.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&tp=0&acceptance=1")
    assert tab.text("[data-field=tp] .msg") == "Must be greater than zero."
    assert tab.text("[data-field=acceptance] .msg") == "Must be less than 1."
    assert tab.text("[data-testid=status]") == "Fix 2 field(s) to calculate."

    tab.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&gpu_layers=40")
    assert "more than the model's 32 layers" in tab.text("[data-field=gpu_layers] .msg")
    assert "more than the model's 32 layers" in tab.text("[data-testid=error]")
    tab.page.fill("#f-gpu_layers", "1.5")
    tab.page.click("[data-testid=calculate]")
    assert tab.text("[data-field=gpu_layers] .msg") == "A share must be between 0 and 1."
    tab.page.fill("#f-gpu_layers", "0,5")  # a French decimal comma is a share, as 0.5 is
    tab.page.click("[data-testid=calculate]")
    tab.page.wait_for_selector("[data-testid=offload-split]")
    assert tab.value("offload-split") == 16
    assert [e for e in tab.errors if "status of 422" not in e] == []  # Chromium logs the refused request


@pytest.mark.parametrize(
    ("query", "shown", "shot"),
    [
        ("mode=catalog&model=llama-3.1-70b&quant=fp8&hw=h100-sxm&tp=4&pp=2&link=pcie5", "parallel", "throughput-advanced-phone-fr"),
        ("mode=catalog&model=llama-3.1-70b&quant=q4-k-m&hw=rtx-4090", "nofit", "throughput-does-not-fit-phone-fr"),
    ],
)
def test_the_advanced_section_and_the_nofit_verdict_fit_a_phone(browser: Any, server: str, query: str, shown: str, shot: str) -> None:
    phone = new_tab(browser, server, viewport={"width": 390, "height": 844}, device_scale_factor=2)
    phone.open(f"/throughput?lang=fr&{query}")
    phone.page.wait_for_selector(f"[data-testid={shown}]")
    overflow = phone.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the page scrolls sideways on a phone"
    phone.shot(shot)
    assert phone.errors == []
    phone.page.context.close()


@pytest.mark.parametrize("hw", ["h100-sxm", "rtx-4090"])
def test_throughput_with_no_quant_follows_the_clis_default_rule(tab: Tab, home: Path, hw: str) -> None:
    """No format picked: the page sends none and shows what `tokometer estimate --json` gives for the same
    device (BF16 under vLLM on a datacenter GPU, Q4_K_M under llama.cpp on a consumer one), and says why."""
    expected = cli_json(home, "estimate", "llama-3.1-8b", "--hw", hw)
    tab.open(f"/throughput?mode=catalog&model=llama-3.1-8b&hw={hw}")
    assert tab.page.input_value("#f-quant") == ""
    wait_value(tab, "estimate", expected["decode"]["estimate_tok_s"])
    assert tab.value("ceiling") == pytest.approx(expected["decode"]["ceiling_tok_s"], rel=1e-12)
    choice = tab.page.locator("[data-testid=precision-choice]")
    assert choice.get_attribute("data-quant") == expected["model"]["quant"]
    assert choice.get_attribute("data-engine") == expected["engine"]["id"]
    words = choice.inner_text()
    assert expected["engine"]["name"] in words and "default rule" in words
    tab.page.select_option("#f-quant", "q4-k-m")  # a picked format: no default-rule line
    tab.page.wait_for_function("() => !document.querySelector('[data-testid=precision-choice]')")
    assert tab.errors == []


def test_throughput_choices_read_in_french(tab: Tab) -> None:
    """Catalog choices in the page's language: decimal commas, CPU memory in French words (issue #14)."""
    tab.open("/throughput?lang=fr&mode=catalog&model=llama-3.1-70b&hw=rtx-4090&gpu_layers=40&advanced=1")
    cpu = tab.page.inner_text("#f-cpu_hw")
    assert "89,6 Go/s" in cpu and "double canal" in cpu
    assert not re.search(r"channel|desktop|server|\d\.\d", cpu), cpu
    assert "AMD EPYC 9655, DDR5-5600 12 canaux" in cpu, cpu  # a named part: its channels translated too
    quants = tab.page.inner_text("#f-quant")
    assert "Q4_K_M (4,89 b)" in quants and not re.search(r"\(\d+\.\d+ b\)", quants)
    assert tab.errors == []


def test_batch_and_memory_pages_match_the_cli(tab: Tab, home: Path) -> None:
    full = cli_json(home, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4-k-m", "--batch", "16")
    batch = full["decode"]
    tab.open("/batch?model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&batch=16")
    # one ridge rule: the page's "compute-bound from" is the CLI's batching line (issue #14, item 11)
    ridge = full["batching"]["compute_bound_batch"]
    assert ridge == batch["ridge_batch"]
    if ridge is None:  # memory-bound at every batch that fits: the page has no ridge either
        assert not tab.page.get_attribute("[data-testid=ridge-batch]", "data-value")
    else:
        assert tab.value("ridge-batch") == ridge
        assert tab.text("[data-testid=ridge-batch]") == num(ridge)
    assert tab.value("aggregate-estimate") == pytest.approx(batch["aggregate_tok_s"], rel=1e-12)
    assert tab.value("aggregate-ceiling") == pytest.approx(batch["aggregate_ceiling_tok_s"], rel=1e-12)
    memory = cli_json(home, "estimate", "qwen3-32b", "--hw", "rtx-4090", "-q", "q4-k-m", "--context", "32768", "--sessions", "2")["memory"]
    tab.open("/memory?model=qwen3-32b&quant=q4-k-m&hw=rtx-4090&context_tokens=32768&sessions=2")
    assert tab.page.get_attribute("[data-testid=fits]", "data-fits") == ("yes" if memory["fits"] else "no")
    assert tab.errors == []


def test_latency_page_shows_the_clis_ttft_and_prefill_bands(tab: Tab, home: Path) -> None:
    """Prefill and TTFT carry the 80 % band `tokometer validate` scores, on the page as in the CLI (issue 25)."""
    full = cli_json(home, "estimate", "llama-3.1-8b", "--hw", "rtx-4090", "-q", "q4-k-m", "--prompt", "2048")
    tab.open("/latency?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&prompt_tokens=2048")
    tab.page.wait_for_selector("[data-testid=ttft-band]")
    assert tab.value("ttft") == pytest.approx(full["latency"]["ttft_s"] * 1e3, rel=1e-12)
    band = full["latency"]["ttft_interval_s"]
    text = tab.text("[data-testid=ttft-band]")
    assert num(band["low"] * 1e3) in text and num(band["high"] * 1e3) in text
    pre = full["prefill"]
    body = tab.text("main")
    assert num(pre["interval_tok_s"]["low"]) in body and num(pre["ceiling_tok_s"]) in body
    assert tab.errors == []


def test_latency_result_with_its_bands_fits_a_phone_in_french(browser: Any, server: str) -> None:
    phone = new_tab(browser, server, viewport={"width": 390, "height": 844}, device_scale_factor=2)
    phone.open("/latency?lang=fr&mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090&prompt_tokens=2048")
    phone.page.wait_for_selector("[data-testid=ttft-band]")
    assert "fourchette" in phone.text("[data-testid=ttft-band]")
    overflow = phone.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, "the latency result scrolls sideways on a phone"
    phone.shot("latency-bands-phone-fr", full_page=True)
    assert phone.errors == []
    phone.page.context.close()


def test_language_switch_persists(tab: Tab) -> None:
    tab.open("/throughput?mode=numbers")
    assert tab.text("h1") == "Inference throughput"
    tab.page.click("button[data-lang=fr]")
    tab.page.wait_for_function("() => document.querySelector('h1').textContent === \"Débit d'inférence\"")
    assert "lang=fr" in tab.page.url
    assert tab.text("[data-testid=calculate]") == "Calculer"
    assert "," in tab.text("[data-testid=ceiling]")  # 23,9: a French decimal comma
    tab.shot("throughput-fr")

    tab.page.reload()
    tab.page.wait_for_selector("body[data-ready=true]")
    assert tab.text("h1") == "Débit d'inférence"
    tab.open("/batch")  # no lang parameter: localStorage remembers
    assert tab.text("h1") == "Débit par lots"
    assert tab.page.get_attribute("html", "lang") == "fr"
    assert "lang=fr" in tab.page.url

    tab.page.click("button[data-lang=en]")
    tab.page.wait_for_function("() => document.querySelector('h1').textContent === 'Batch throughput'")
    tab.open("/latency")
    assert tab.text("h1") == "Latency"
    assert tab.errors == []


def test_speed_feel_streams_at_the_asked_rates(tab: Tab) -> None:
    rates = [2, 5, 10, 30, 100]
    tab.open("/feel?rates=" + ",".join(map(str, rates)))
    tab.page.wait_for_timeout(400)
    start = tab.page.evaluate("performance.now()")
    tab.page.wait_for_timeout(3000)  # the 100 tok/s lane ends its 384 tokens at 3.84 s
    end = tab.page.evaluate("performance.now()")
    lanes = tab.page.evaluate("window.tokometerFeel.lanes()")
    assert [lane["rate"] for lane in lanes] == rates
    measured = {}
    for lane in lanes:
        times = [t for t in lane["times"] if start <= t <= end]
        assert len(times) >= 4, lane["rate"]
        rate = (len(times) - 1) * 1000.0 / (times[-1] - times[0])
        measured[lane["rate"]] = rate
        assert rate == pytest.approx(lane["rate"], rel=0.10)
    SHOTS.parent.mkdir(parents=True, exist_ok=True)
    (SHOTS.parent / "feel_rates.json").write_text(json.dumps({"asked_tok_s": rates, "measured_tok_s": measured}, indent=2))
    assert tab.page.locator("[data-testid=lane] .v-broken").count() == 1  # 2 tok/s feels broken
    assert tab.page.locator("[data-testid=lane] .v-reading").count() == 1  # 5 tok/s is reading speed
    tab.shot("feel-running")
    assert tab.errors == []


def test_speed_feel_rejects_bad_rates(tab: Tab) -> None:
    tab.open("/feel?rates=5,20")
    assert tab.page.locator("[data-testid=lane]").count() == 2
    tab.page.fill("[data-testid=rates]", "5,-2")
    tab.page.click("[data-testid=apply]")
    assert tab.text("#f-rates-msg") == "Rates must be positive numbers."


def test_bad_input_shows_a_message(tab: Tab) -> None:
    tab.open("/throughput?mode=numbers")
    tab.page.fill("#f-params_b", "-5")
    tab.page.fill("#f-bits", "abc")
    tab.page.click("[data-testid=calculate]")
    assert tab.text("[data-field=params_b] .msg") == "Must be greater than zero."
    assert tab.text("[data-field=bits] .msg") == "Enter a number."
    assert tab.text("[data-testid=status]") == "Fix 2 field(s) to calculate."
    assert tab.page.get_attribute("#f-params_b", "aria-invalid") == "true"
    assert "params_b=-5" in tab.page.url  # even a bad state can be shared and shown
    tab.shot("throughput-bad-input")
    assert tab.errors == []

    tab.open("/throughput?mode=catalog&model=llama-3.1-8bb&hw=rtx-4090&lang=fr")
    error = tab.text("[data-testid=error]")
    assert "modèle inconnu : « llama-3.1-8bb »" in error and "llama-3.1-8b" in error  # the server's line, in French
    assert "Vouliez-vous dire" in error
    assert "vouliez-vous dire" in tab.text("[data-field=model] .msg")
    tab.shot("throughput-unknown-model-fr")
    tab.page.click("[data-suggest='llama-3.1-8b']")  # a suggestion fixes the field
    tab.page.wait_for_selector("[data-testid=ceiling]")
    assert tab.page.input_value("#f-model") == "llama-3.1-8b"
    assert "model=llama-3.1-8b&" in tab.page.url


def test_hardware_table_sorts_and_filters(tab: Tab) -> None:
    tab.open("/hardware")
    rows = tab.page.locator("[data-testid=hardware-table] tbody tr")
    assert 0 < rows.count() <= 60  # the first rows, then a button for the rest
    tab.page.click("[data-testid=show-all]")
    total = rows.count()
    assert total > 100
    tab.page.click("button[data-sort=bandwidth]")
    bandwidths = [float(x.replace(",", "")) for x in tab.page.locator("[data-testid=hardware-table] tbody tr td:nth-child(5)").all_inner_texts()]
    assert bandwidths == sorted(bandwidths, reverse=True)
    assert "sort=bandwidth" in tab.page.url
    tab.page.select_option("select[name=vendor]", "apple")
    assert 0 < rows.count() < total
    assert set(tab.page.locator("[data-testid=hardware-table] tbody tr td:nth-child(2)").all_inner_texts()) == {"apple"}
    assert "vendor=apple" in tab.page.url
    tab.page.reload()
    tab.page.wait_for_selector("body[data-ready=true]")
    assert tab.page.input_value("select[name=vendor]") == "apple"
    assert tab.errors == []


def test_runs_page_shows_an_empty_state_and_the_bench_urls(tab: Tab) -> None:
    tab.open("/runs")
    assert tab.page.locator("[data-testid=runs-empty]").count() == 1
    assert "http://127.0.0.1:9/v1" in tab.text("main")
    assert tab.errors == []


@contextlib.contextmanager
def thread_server(app: Any) -> Iterator[str]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_runs_page_lists_measured_next_to_predicted(browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokometer.store", fake_store_module())
    with thread_server(create_app()) as base:
        tab = new_tab(browser, base)
        tab.open("/runs")
        rows = tab.page.locator("[data-testid=runs-table] tbody tr")
        assert rows.count() == 3
        first = rows.nth(0).locator("td").all_inner_texts()
        assert first[1:4] == ["llama-3.1-8b", "rtx-4090", "decode"]
        assert first[-2] == "91%"  # 121.5 measured / 134 estimated
        assert rows.nth(1).locator("td .over").count() == 1  # 250 measured over a 200 ceiling
        rows.nth(0).click()
        tab.page.wait_for_selector("[data-testid=run-detail] h3")
        assert "run=12" in tab.page.url
        tab.shot("runs")
        assert tab.errors == []
        tab.page.context.close()


def test_a_setup_that_does_not_fit_says_so_first_with_the_nearest_that_fit(tab: Tab, home: Path) -> None:
    """Issue #14, item 2: 70B Q4_K_M on a 4090 leads with "does not fit" and the CLI's remedies; the
    big figures read "if it fit"; in French too."""
    expected = cli_json(home, "estimate", "llama-3.1-70b", "--hw", "rtx-4090", "-q", "q4-k-m")
    remedies = expected["fit"]["remedies"]
    assert not expected["fit"]["fits"] and remedies
    tab.open("/throughput?mode=catalog&model=llama-3.1-70b&quant=q4-k-m&hw=rtx-4090")
    tab.page.wait_for_selector("[data-testid=nofit]")
    verdict = tab.page.locator("[data-testid=nofit]")
    ceiling = tab.page.locator("[data-testid=ceiling]")
    assert verdict.bounding_box()["y"] < ceiling.bounding_box()["y"]  # the verdict comes first
    assert "Does not fit" in tab.text("[data-testid=nofit] h2")
    items = tab.page.locator("[data-testid=remedies] li")
    assert items.count() == len(remedies)
    for i, remedy in enumerate(remedies):
        assert items.nth(i).get_attribute("data-kind") == remedy["kind"]
        assert float(items.nth(i).get_attribute("data-value")) == pytest.approx(remedy["estimate_tok_s"], rel=1e-12)
        assert num(remedy["estimate_tok_s"]) in items.nth(i).inner_text()
    assert "if it fit" in tab.text("[data-testid=ceiling-if-fit]").lower()  # h3 is set in capitals
    assert any(w.startswith("does not fit:") for w in expected["warnings"])
    # the verdict card says it; the warning list does not repeat it (issue #14)
    assert "the speed shown assumes it did" not in tab.page.inner_text("main")
    tab.shot("throughput-does-not-fit")

    tab.page.click("button[data-lang=fr]")
    tab.page.wait_for_function("() => document.querySelector('[data-testid=nofit] h2')?.textContent.startsWith('Ne tient pas')")
    assert "si cela tenait" in tab.text("[data-testid=ceiling-if-fit]").lower()

    tab.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090")  # one that fits: no verdict
    assert tab.page.locator("[data-testid=nofit]").count() == 0
    assert tab.page.locator("[data-testid=ceiling-if-fit]").count() == 0
    assert tab.errors == []

