"""French everywhere the web app shows text: the catalogs, the units, and the English lines the server
writes (why lines, warnings, notes, error messages), translated by message id.

The page translates a server line with `message()` in js/i18n.js: the first pattern of
i18n/messages.json that matches gives the id, and the `msg.<id>` template of the page's language is
filled with the captured values. `render` below mirrors that function, so these tests check the data
the page uses: every line a representative set of requests produces has an id, the English template
gives back exactly the server's line, and the French one leaves no English unit behind.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tokometer.bench.grading import grade
from tokometer.web.app import STATIC_DIR, create_app

I18N = STATIC_DIR / "i18n"
PLACEHOLDER = re.compile(r"\{(\w+)(?::([\w.]+))?\}")


def catalog(lang: str) -> dict[str, str]:
    return json.loads((I18N / f"{lang}.json").read_text(encoding="utf-8"))


@cache
def patterns() -> list[tuple[str, re.Pattern[str]]]:
    raw = json.loads((I18N / "messages.json").read_text(encoding="utf-8"))
    # JS names a group (?<name>...); Python spells it (?P<name>...)
    return [(key, re.compile(re.sub(r"\(\?<(?![=!])", "(?P<", source))) for key, source in raw.items()]


def _match(line: str, wanted: Any) -> tuple[str, dict[str, str | None]] | None:
    for key, pattern in patterns():
        if wanted(key):
            found = pattern.search(line)
            if found:
                return key, found.groupdict()
    return None


def _local_number(text: str, lang: str) -> str:
    if lang == "en" or not re.fullmatch(r"-?\d{1,3}(,\d{3})*(\.\d+)?|-?\d+(\.\d+)?", text):
        return text
    whole, _, decimals = text.replace(",", "").lstrip("-").partition(".")
    grouped = f"{int(whole):,}".replace(",", "\u202f")
    return ("-" if text.startswith("-") else "") + grouped + ("," + decimals if decimals else "")


def _fill(key: str, groups: dict[str, str | None], lang: str) -> str:
    texts = catalog(lang)

    def one(found: re.Match[str]) -> str:
        name, prefix = found.group(1), found.group(2)
        value = groups.get(name)
        if value is None:
            return ""
        if prefix:
            return texts[f"{prefix}.{value}"]
        part = f"{key}.{name}"
        sub = _match(value, lambda other: other == part or other.startswith(part + "."))
        return _fill(*sub, lang) if sub else _local_number(value, lang)

    return PLACEHOLDER.sub(one, texts[f"msg.{key}"])


def render(line: str, lang: str) -> str | None:
    """What the page shows for a server line, or None when no message id knows it."""
    found = _match(line, lambda key: key.count(".") == 1)
    return _fill(*found, lang) if found else None


ESTIMATES: list[dict[str, Any]] = [
    {},
    {"model": "llama-3.1-70b", "hw": "rtx-4090", "quant": "q4-k-m"},
    {"model": "qwen3-30b-a3b", "hw": "rtx-4090"},
    {"model": "deepseek-v3", "hw": "h100-sxm"},
    {"model": "llama-3.1-70b", "hw": "h100-sxm", "tp": 2},
    {"model": "llama-3.1-70b", "hw": "h100-sxm", "tp": 3},
    {"model": "llama-3.1-70b", "hw": "rtx-4090", "pp": 2},
    {"model": "qwen2.5-32b", "hw": "rtx-4090", "gpu_layers": "0.8"},
    {"model": "llama-3.1-70b", "hw": "rtx-4090", "gpu_layers": "0.5", "cpu_hw": "ddr4-dual-channel"},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "draft": "llama-3.2-1b"},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "batch": 16, "context_tokens": 8192},
    {"model": "llama-3.1-8b", "hw": "m2-ultra"},
    {"model": "qwen3.5-9b", "hw": "rtx-4090", "quant": "q4-k-m"},  # KV cache and recurrent state
    {"model": "llama-3.1-8b", "hw": "a10g"},  # a peak not verified against a datasheet (issue 13)
    {"model": "llama-3.1-8b", "hw": "h100"},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "context_tokens": 10_000_000},
    {"model": "llama-3.1-70b", "hw": "m3-max-40c-48gb"},
    {"model": "llama-3.1-8b", "hw": "ddr5-dual-channel"},
    {"model": "gpt-oss-120b", "hw": "rtx-4090", "offload_experts": "all"},  # PCIe-bound prefill (issue 28)
    {"model": "deepseek-v3", "hw": "h100-sxm", "tp": 8},  # memory-bound prefill split over 8 devices
    # a serving engine's TTFT terms (usecases.estimate.serving_stack): SGLang's eager floor, TensorRT-LLM's latency
    {"model": "deepseek-r1", "hw": "h200", "quant": "fp8", "engine": "sglang", "tp": 8, "prompt_tokens": 1024},
    {"model": "deepseek-r1", "hw": "b200", "quant": "fp8", "engine": "tensorrt-llm", "tp": 8, "prompt_tokens": 1024},
    {"model": "llama-3.1-70b", "hw": "rtx-4090", "gpu_layers": 40, "prompt_tokens": 4000},  # PCIe, several chunks
    {"params_b": 70, "bits": 16, "bandwidth_gb_per_s": 3350},
    {"params_b": 70, "bits": 4.5, "bandwidth_gb_per_s": 1000, "memory_gb": 24},
]
ERRORS: list[dict[str, Any]] = [
    {"model": "nope", "hw": "rtx-4090"},
    {"model": "llama-3.1-8b", "hw": "rtx-409"},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "quant": "zz"},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "batch": -1},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "kv_dtype": "q4_k_m"},
    {"bandwidth_gb_per_s": 1e-311},
    {"model": "llama-3.1-8b", "hw": "local"},
]
UTILISATION: list[dict[str, Any]] = [
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "measured_decode_tok_s": 400},
    {"model": "llama-3.1-8b", "hw": "rtx-4090", "measured_decode_tok_s": 20},
    {"params_b": 8, "bits": 4.5, "bandwidth_gb_per_s": 1000, "measured_decode_tok_s": 20},
]


@cache
def server_lines() -> tuple[str, ...]:
    client = TestClient(create_app())
    lines: list[str] = []
    for body in ESTIMATES:
        data = client.post("/api/estimate", json=body).json()
        assert "error" not in data, (body, data)
        lines += data["explanation"] + data["warnings"] + [data["hardware"]["name"]] * data["hardware"]["name"].startswith("custom")
    for body in ERRORS:
        response = client.post("/api/estimate", json=body)
        assert response.status_code == 422, body
        lines.append(response.json()["error"])
    for body in UTILISATION:
        data = client.post("/api/utilisation", json=body).json()
        lines += data["utilisation"]["notes"] + data["estimate"]["warnings"]
    prediction = client.post("/api/estimate", json={}).json()
    for measured in (400.0, 130.0, 100.0, 5.0):  # above the ceiling, in the band, below it, far below
        summary = {"decode_tps": {"median": measured, "n": 3}, "requests_ok": 4, "requests_failed": 0}
        graded = grade(summary, prediction)
        lines += [graded["verdict"]] + [flag["message"] for flag in graded["flags"] if flag["code"] != "far-below"]  # far-below's advice is being reworded (issue 14)
    ceiling = prediction["prefill"]["ceiling_tok_s"]
    for prefill in (ceiling * 1.5, prediction["prefill"]["interval_tok_s"]["low"] / 2):  # above the roofline, below the band
        summary = {"decode_tps": {"median": 130.0, "n": 3}, "prefill_tps": {"median": prefill, "n": 3}, "requests_ok": 4}
        flags = [flag for flag in grade(summary, prediction)["flags"] if flag["code"].startswith("prefill-")]
        assert len(flags) == 1, flags
        lines += [flag["message"] for flag in flags]
    lines.append(grade({"decode_tps": {"median": 50.0, "n": 3}}, None)["verdict"])
    plan = client.post("/api/plan", json={"model": "llama-3.1-8b", "rate_per_s": 10, "slo_ttft_ms": 500, "slo_tpot_ms": 50}).json()
    lines += [row["binding"] for row in plan["configs"]]  # the Serving page's plan table
    return tuple(dict.fromkeys(lines))


def test_every_line_the_server_writes_has_a_message_id() -> None:
    lines = server_lines()
    assert len(lines) > 30
    assert [line for line in lines if render(line, "fr") is None] == []


def test_the_english_template_gives_back_the_servers_line() -> None:
    for line in server_lines():
        assert render(line, "en") == line


@pytest.mark.parametrize("line", server_lines())
def test_the_french_line_is_french_with_french_units(line: str) -> None:
    french = render(line, "fr")
    assert french is not None and french != line
    assert not re.search(r"\bGB\b|GB/s|\{", french), french
    assert not re.search(r"\b(of the|each step|does not|per token|assumed|unknown|must be)\b", french), french
    for number in re.findall(r"(?<![\w.])(\d+\.\d+)(?= (?:GB|ms|tok/s|TFLOP)\b|x\b)", line):
        assert number not in french, (number, french)  # a measured decimal gets a comma in French


def test_catalogs_hold_every_message_and_word() -> None:
    en, fr = catalog("en"), catalog("fr")
    ids = [key for key, _ in patterns()]
    words = tuple({prefix + "." for text in en.values() for _, prefix in PLACEHOLDER.findall(text) if prefix})
    assert words and sorted(f"msg.{key}" for key in ids) == sorted(key for key in en if key.startswith("msg.") and not key.startswith(words))
    for key in ids:
        for _, prefix in PLACEHOLDER.findall(en[f"msg.{key}"]):
            if prefix:
                assert [k for k in en if k.startswith(prefix + ".")], prefix
    for lang, texts in (("en", en), ("fr", fr)):
        for key, text in texts.items():
            assert set(PLACEHOLDER.findall(text)) == set(PLACEHOLDER.findall(en[key])), (lang, key)


def test_units_follow_the_language() -> None:
    en, fr = catalog("en"), catalog("fr")
    assert (en["unit.gb"], fr["unit.gb"], fr["unit.gbps"]) == ("GB", "Go", "Go/s")
    assert [key for key, text in fr.items() if re.search(r"\b[GMkT]B\b", text)] == []
    assert [key for key, text in en.items() if re.search(r"\b[GMkT]o\b", text)] == []
    assert fr["hw.tierTop"].endswith("Go") and fr["hw.tierUpTo"].endswith("Go")


def test_every_unit_and_key_the_pages_build_is_translated() -> None:
    en = catalog("en")
    js = {path: path.read_text(encoding="utf-8") for path in Path(STATIC_DIR / "js").rglob("*.js")}
    units = set(re.findall(r"unit: '(\w+)'", js[STATIC_DIR / "js" / "form.js"]))
    assert {"gb", "gbps", "billions", "tok_s"} <= units
    assert sorted(f"unit.{u}" for u in units if f"unit.{u}" not in en) == []
    used = set()
    for text in js.values():
        used |= set(re.findall(r"\bt\('([\w.-]+)'", text))
    assert "a11y.skip" in used and sorted(used - set(en)) == []
    # every family built as t(`prefix.${...}`) has entries in the catalog
    for text in js.values():
        for prefix in re.findall(r"\bt\(`([\w.]+)\.\$\{", text):
            assert [k for k in en if k.startswith(prefix + ".")], prefix
    assert not [path.name for path, text in js.items() if re.search(r"[`'] ?(GB|GB/s|kB) ?[`']|\} GB\b", text)]
