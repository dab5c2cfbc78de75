"""The web app on a phone (390 px) and in French, measured in a real headless Chromium.

Each test here stands for a page that failed a user's first hour (issue 14): chart text 6-7 px tall
on Batch, Plots and the speed-feel scale; a Hardware table that scrolled sideways in an 11,000 px
page; a throughput formula cut off; the Runs detail card without its grade and with literal
backticks; French half done; a 31-digit figure; a model picked on one page lost on the next;
roofline labels under the line. Screenshots land in artifacts/screenshots/.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tokometer.web.app import create_app
from web_helpers import fake_store_module, start_serve, stop

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
PHONE = {"width": 390, "height": 844}

# The smallest rendered size of any chart text: its CSS font size times the SVG's scale on screen.
MIN_CHART_FONT_PX = """() => {
  const sizes = [];
  for (const svg of document.querySelectorAll('svg.chart, svg.scale')) {
    const scale = svg.getScreenCTM().a;
    for (const text of svg.querySelectorAll('text')) {
      if (text.textContent.trim()) sizes.push(parseFloat(getComputedStyle(text).fontSize) * scale);
    }
  }
  return sizes.length ? Math.min(...sizes) : null;
}"""
SIDEWAYS_PX = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        proc, base = start_serve(str(tmp_path_factory.mktemp("phone-home")), log=True)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield base
    stop(proc)


class Page:
    def __init__(self, browser: Any, base: str, viewport: dict[str, int]) -> None:
        self.context = browser.new_context(viewport=viewport, locale="en-US")
        self.page = self.context.new_page()
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("body[data-ready=true]", timeout=15_000)
        self.page.wait_for_selector("[data-testid=result][data-ready], [data-testid=hardware-table], [data-testid=lanes], .tablewrap", timeout=15_000)
        return self.page

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


@pytest.fixture
def phone(browser: Any, server: str) -> Iterator[Page]:
    page = Page(browser, server, PHONE)
    yield page
    page.context.close()


@pytest.fixture
def desktop(browser: Any, server: str) -> Iterator[Page]:
    page = Page(browser, server, {"width": 1280, "height": 900})
    yield page
    page.context.close()


@pytest.mark.parametrize("path", ["/batch", "/curves", "/feel", "/batch?lang=fr", "/curves?lang=fr"])
def test_chart_text_is_readable_on_a_phone(phone: Page, path: str) -> None:
    page = phone.open(path)
    page.wait_for_selector("svg.chart, svg.scale")
    smallest = page.evaluate(MIN_CHART_FONT_PX)
    assert smallest is not None and smallest >= 11, f"chart text renders at {smallest:.1f} px on a 390 px screen"
    assert page.evaluate(SIDEWAYS_PX) <= 1
    phone.shot(f"phone-{path.strip('/').replace('?', '-').replace('=', '-')}")
    assert phone.errors == []


def test_the_hardware_page_is_usable_on_a_phone(phone: Page) -> None:
    page = phone.open("/hardware")
    table = page.locator("[data-testid=hardware-table]")
    wrapper_overflow = page.evaluate("() => { const w = document.querySelector('.tablewrap'); return w.scrollWidth - w.clientWidth; }")
    assert wrapper_overflow <= 1, "the hardware table scrolls sideways on a phone"
    visible = page.evaluate("() => [...document.querySelectorAll('[data-testid=hardware-table] thead th')].filter((th) => th.offsetParent).map((th) => th.querySelector('button').dataset.sort)")
    assert {"name", "estimate", "fits"} <= set(visible) and len(visible) <= 6
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < 4500, f"the hardware page is {height} px tall on a phone"
    shown = table.locator("tbody tr").count()
    assert 0 < shown < 50
    phone.shot("phone-hardware")
    page.click("[data-testid=show-all]")
    assert table.locator("tbody tr").count() > 100
    assert phone.errors == []


def test_the_hardware_page_is_not_a_wall_of_rows_on_a_desktop(desktop: Page) -> None:
    page = desktop.open("/hardware")
    height = page.evaluate("() => document.documentElement.scrollHeight")
    assert height < 6000, f"the hardware page is {height} px tall at 1280 px"
    assert page.locator("[data-testid=show-all]").count() == 1
    assert desktop.errors == []


def test_the_throughput_formula_wraps_on_a_phone(phone: Page) -> None:
    page = phone.open("/throughput?lang=fr")
    overflow = page.evaluate("() => { const f = document.querySelector('[data-testid=formula]'); return f.scrollWidth - f.clientWidth; }")
    assert overflow <= 1, "the formula is cut off"
    assert page.evaluate(SIDEWAYS_PX) <= 1
    assert phone.errors == []


def test_french_pages_show_french_why_lines_and_units(phone: Page) -> None:
    page = phone.open("/throughput?lang=fr&mode=catalog&model=llama-3.1-70b&quant=q4-k-m&hw=rtx-4090")
    why = page.inner_text(".why")
    assert "le décodage est limité par la mémoire" in why
    # "does not fit" once: in the verdict card, not again among the warnings (issue #14)
    assert page.inner_text("[data-testid=nofit] h2").startswith("Ne tient pas") and "ne tient pas" not in why
    assert "Go" in why and " GB" not in why
    assert " GB" not in page.inner_text("main")
    page = phone.open("/throughput?lang=fr&mode=numbers&params_b=70&bits=16&bandwidth_gb_per_s=1000")
    assert "appareil personnalisé" in page.inner_text(".setup")
    page = phone.open("/hardware?lang=fr")
    tiers = page.inner_text("[data-testid=tiers]")
    assert "≤ 512 Go" in tiers and "> 512 Go" in tiers and not re.search(r"\d GB\b", tiers)  # device names keep "12GB"
    page = phone.open("/throughput?lang=fr&mode=catalog&model=nope&hw=rtx-4090")
    error = page.inner_text("[data-testid=error]")
    assert "modèle inconnu" in error and "`" not in error
    assert page.locator("[data-testid=error] code").count() >= 1
    assert [e for e in phone.errors if "status of 422" not in e] == []


def test_a_huge_number_stays_inside_its_card(desktop: Page) -> None:
    # 1e30 B parameters are refused as implausible now (issue 28): the largest model on a very slow bus
    page = desktop.open("/throughput?mode=numbers&params_b=100000&bits=16&bandwidth_gb_per_s=0.000001")
    text = page.inner_text("[data-testid=ceiling]")
    assert "10" in text and len(text) < 16, text
    spill = page.evaluate("() => [...document.querySelectorAll('.card')].map((c) => c.scrollWidth - c.clientWidth)")
    assert max(spill) <= 1
    assert desktop.errors == []


def test_a_model_picked_on_memory_stays_on_throughput(desktop: Page) -> None:
    page = desktop.open("/memory")
    page.fill("#f-model", "qwen3-32b")
    page.wait_for_function("() => document.querySelector('.setup')?.textContent.includes('Qwen3 32B')")
    page = desktop.open("/throughput")
    assert page.input_value("#f-model") == "qwen3-32b"
    assert "Qwen3 32B" in page.inner_text(".setup")
    page = desktop.open("/throughput?mode=catalog&model=llama-3.1-8b&quant=q4-k-m&hw=rtx-4090")  # a shared link wins
    assert page.input_value("#f-model") == "llama-3.1-8b"
    assert desktop.errors == []


def test_roofline_labels_do_not_overlap(browser: Any, server: str) -> None:
    for viewport in (PHONE, {"width": 1280, "height": 900}):
        view = Page(browser, server, viewport)
        page = view.open("/curves")
        boxes = page.evaluate("""() => [...document.querySelectorAll('[data-testid=roofline-chart] text.ptlabel, [data-testid=roofline-chart] text.vlabel')]
          .map((t) => { const b = t.getBoundingClientRect(); return [t.textContent, b.left, b.right, b.top, b.bottom]; })""")
        labels = [b[0] for b in boxes]
        assert "B=1" in labels and any(label.startswith("B=") and label != "B=1" for label in labels)
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                overlap = min(a[2], b[2]) - max(a[1], b[1]) > 1 and min(a[4], b[4]) - max(a[3], b[3]) > 1
                assert not overlap, (a, b)
        dots = page.evaluate("""() => [...document.querySelectorAll('[data-testid=roofline-chart] circle.pt')].map((c) => { const b = c.getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom]; })""")
        for label in boxes:
            for dot in dots:
                inside = min(label[2], dot[1]) - max(label[1], dot[0]) > 2 and min(label[4], dot[3]) - max(label[3], dot[2]) > 2
                assert not inside, (label, dot)
        view.context.close()


def test_the_runs_table_and_detail_card_at_1280(browser: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import web_helpers
    from test_web_browser import thread_server

    long_path = {**web_helpers.RUNS[2], "id": 9, "model": "/home/someone/models/" + "Meta-Llama-3.1-70B-Instruct-" * 3 + "Q4_K_M.gguf", "hardware": "local"}
    monkeypatch.setattr(web_helpers, "RUNS", [*web_helpers.RUNS, long_path])  # a path as wide as the screen
    monkeypatch.setitem(sys.modules, "tokometer.store", fake_store_module())
    with thread_server(create_app()) as base:
        view = Page(browser, base, {"width": 1280, "height": 900})
        page = view.open("/runs?run=12")
        page.wait_for_selector("[data-testid=run-detail] h3")
        edge = page.evaluate("""() => { const wrap = document.querySelector('.tablewrap').getBoundingClientRect();
          const cells = [...document.querySelectorAll('[data-testid=runs-table] tr > :last-child')].map((c) => c.getBoundingClientRect().right);
          return Math.max(...cells) - wrap.right; }""")
        assert edge <= 0, "the last column of the runs table is clipped"
        detail = page.locator("[data-testid=run-detail]")
        assert "55% of the physical ceiling" in detail.inner_text()
        assert detail.locator("[data-testid=run-flags] li").count() == 2
        assert detail.locator("code").count() == 2 and "`" not in detail.inner_text()
        view.shot("runs-detail")
        page = view.open("/runs?run=12&lang=fr")
        page.wait_for_selector("[data-testid=run-grade]")
        assert "du plafond physique" in page.inner_text("[data-testid=run-grade]")
        assert "`" not in page.inner_text(".page-head")
        assert view.errors == []
        view.context.close()


ACTIVE_TAB_BOX = """() => {
  const bar = document.getElementById('nav').getBoundingClientRect();
  const tab = document.querySelector('#nav a[aria-current=page]').getBoundingClientRect();
  return { barLeft: bar.left, barRight: bar.right, tabLeft: tab.left, tabRight: tab.right };
}"""


@pytest.mark.parametrize("path", ["/runs", "/serving", "/runs?lang=fr", "/serving?lang=fr", "/hardware", "/feel"])
def test_the_active_tab_is_in_view_on_a_phone(phone: Page, path: str) -> None:
    """Issue 28: on a 390 px phone the Runs tab was scrolled off screen and Serving half cut."""
    page = phone.page
    phone.page.goto(phone.base + path)
    page.wait_for_selector("body[data-ready=true]", timeout=15_000)
    page.wait_for_timeout(300)  # fonts and the next frame: the bar is placed again once they settle
    box = page.evaluate(ACTIVE_TAB_BOX)
    assert box["tabLeft"] >= box["barLeft"] - 1 and box["tabRight"] <= box["barRight"] + 1, box


def test_the_throughput_page_starts_on_the_clis_default_setup(desktop: Page) -> None:
    """The page started on a bare 70B / 16-bit / 3,350 GB/s model; the CLI on Llama 3.1 8B on an RTX 4090."""
    page = desktop.open("/throughput")
    assert page.input_value("#f-model") == "llama-3.1-8b" and page.input_value("#f-hw") == "rtx-4090"
    assert "Llama 3.1 8B" in page.text_content("[data-testid=result]") and "Q4_K_M" in page.text_content("[data-testid=result]")
