"""The web app agrees with the CLI (issue 28): its API takes the CLI's names for its fields, the
Throughput page starts on the CLI's default setup, and the phone tab bar's arithmetic brings the
page's tab into view (run in node; tests/test_web_phone.py checks it in a real browser)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from helpers import cli
from tokometer.usecases.policy import DEFAULT_HARDWARE, DEFAULT_MODEL
from tokometer.web.app import STATIC_DIR, create_app

JS = STATIC_DIR / "js"


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def test_simulate_takes_the_clis_rate(client: TestClient) -> None:
    """`/api/simulate?rate=5` answered 422: the API calls it rate_per_s."""
    common = {"model": "llama-3.1-8b", "hw": "h100-sxm", "num_requests": "200"}
    by_cli = client.get("/api/simulate", params={**common, "rate": "5"})
    by_api = client.get("/api/simulate", params={**common, "rate_per_s": "5"})
    assert by_cli.status_code == 200, by_cli.text
    assert by_cli.json() == by_api.json()
    listed = client.get("/api/simulate", params={"model": "llama-3.1-8b", "hw": "h100-sxm", "rate": "2,8", "slo-ttft": "500", "n": "200"})
    assert listed.status_code == 200, listed.text
    assert [p["rate_per_s"] for p in listed.json()["points"]] == [2.0, 8.0]
    both = client.get("/api/simulate", params={**common, "rate": "5", "rate_per_s": "6"})
    assert both.status_code == 422 and "rate" in both.json()["error"] and "rate_per_s" in both.json()["error"]


def test_plan_and_estimate_take_the_clis_names(client: TestClient) -> None:
    plan = client.post("/api/plan", json={"model": "llama-3.1-8b", "rate": 10, "slo_ttft_p99": 500, "slo-tpot-p99": 50})
    same = client.post("/api/plan", json={"model": "llama-3.1-8b", "rate_per_s": 10, "slo_ttft_ms": 500, "slo_tpot_ms": 50})
    assert plan.status_code == 200, plan.text
    assert plan.json() == same.json()
    bare = client.get("/api/estimate", params={"params": "70", "bits": "16", "bandwidth": "3350"})
    assert bare.status_code == 200, bare.text
    assert bare.json()["decode"]["ceiling_tok_s"] == pytest.approx(3350 / 140, rel=0.01)
    quant = client.get("/api/estimate", params={"model": "llama-3.1-8b", "hw": "rtx-4090", "q": "q8_0", "context": "4096"})
    assert quant.status_code == 200 and quant.json()["model"]["quant"] == "q8-0" and quant.json()["workload"]["context_tokens"] == 4096
    assert client.get("/api/estimate", params={"nonsense": "1"}).status_code == 422  # unknown names are still refused


def test_the_throughput_page_defaults_are_the_clis(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    """The page started on a bare 70B / 16-bit / 3,350 GB/s model while the CLI starts on Llama 3.1 8B on an RTX 4090 (Q4_K_M)."""
    page = (JS / "pages" / "throughput.js").read_text(encoding="utf-8")
    modes = re.search(r"modes: \[([^\]]*)\]", page)
    assert modes and modes.group(1).split(",")[0].strip() == "'catalog'"  # the first mode is the default
    form = (JS / "form.js").read_text(encoding="utf-8")
    defaults = re.search(r"export const SETUP_DEFAULTS = \{(.*?)\};", form, re.S)
    assert defaults
    assert f"model: '{DEFAULT_MODEL}'" in defaults.group(1) and f"hw: '{DEFAULT_HARDWARE}'" in defaults.group(1)
    assert "quant: ''" in defaults.group(1)  # the server's one default rule, as the CLI's
    web = client.post("/api/estimate", json={"model": DEFAULT_MODEL, "hw": DEFAULT_HARDWARE, "quant": ""}).json()
    code, out, err = cli(capsys, "estimate", "--json")
    assert code == 0, err
    terminal = json.loads(out)
    assert web["model"]["quant"] == terminal["model"]["quant"] == "q4-k-m"
    assert web["decode"]["estimate_tok_s"] == terminal["decode"]["estimate_tok_s"]


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    return node


def _run_js(expression: str) -> object:
    module = (JS / "navscroll.js").resolve().as_uri()
    script = f"import * as nav from {json.dumps(module)};\nconsole.log(JSON.stringify({expression}));"
    out = subprocess.run([_node(), "--input-type=module", "-e", script], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_the_active_tab_is_centred_from_the_measured_boxes() -> None:
    """A 390 px phone: the bar starts 60 px from the left edge (the brand sits beside it), so the old
    `offsetLeft` (counted from the header) scrolled Runs off screen."""
    bar = {"left": 60, "width": 330}
    # Runs, the last tab, at 1,100-1,160 px of a 1,200 px bar's content; the bar scrolled to 0
    runs = _run_js(f"nav.centredScrollLeft({json.dumps(bar)}, {{left: 1160, width: 60}}, 0, 1200, 330)")
    assert runs == 1200 - 330  # as far as the bar scrolls
    serving = _run_js(f"nav.centredScrollLeft({json.dumps(bar)}, {{left: 1000, width: 80}}, 0, 1200, 330)")
    assert serving == round(940 - (330 - 80) / 2)
    # after scrolling, the tab's box is where the bar shows it whole
    for scroll, left, width in ((runs, 1160, 60), (serving, 1000, 80)):
        shown = {"left": left - scroll, "width": width}
        assert _run_js(f"nav.wholeInView({json.dumps(bar)}, {json.dumps(shown)})") is True
    first = _run_js(f"nav.centredScrollLeft({json.dumps(bar)}, {{left: 62, width: 90}}, 0, 1200, 330)")
    assert first == 0  # never before the start
    measured_mid_scroll = _run_js(f"nav.centredScrollLeft({json.dumps(bar)}, {{left: 200, width: 80}}, 500, 1200, 330)")
    assert measured_mid_scroll == round(500 + 140 - 125)  # boxes measured while scrolled count the scroll


def test_main_js_places_the_tab_with_the_pure_function() -> None:
    main = (JS / "main.js").read_text(encoding="utf-8")
    assert "showActiveTab(" in main and "offsetLeft" not in main
    assert "centredScrollLeft(bar.getBoundingClientRect(), tab.getBoundingClientRect()" in Path(JS / "navscroll.js").read_text(encoding="utf-8")
