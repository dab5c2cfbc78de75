"""The golden cases: what `estimate --json`, `validate --json`, bench grading, `bench --json` and
`runs show/list --json` print, fixed in files.

The bench cases run the real CLI against a fake server (an httpx MockTransport) on a fake clock that
advances 10 ms per read, so every timing is exact; the wall-clock dates are replaced by `DATE`.

`python tests/golden.py` rewrites tests/fixtures/golden/ from the current code; `test_golden.py` asserts the
output stays byte-equal, so a restructure that changes a number or a key shows up as a failing case.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner

GOLDEN = Path(__file__).resolve().parent / "fixtures" / "golden"
CASES_CSV = GOLDEN / "validate_cases.csv"

# name -> `tokometer estimate` arguments (each adds --json)
ESTIMATE_CASES: dict[str, list[str]] = {
    "default": [],
    "preset-h100-fp16": ["llama-3.1-8b", "--hw", "h100-sxm", "-q", "fp16"],
    "preset-70b-mac": ["llama-3.1-70b", "--hw", "m2-ultra-76c", "-q", "q4_k_m"],
    "moe-mixtral": ["mixtral-8x7b", "--hw", "h100-sxm", "-q", "fp8"],
    "bare-numbers": ["--params", "70", "--bits", "16", "--bandwidth", "3350"],
    "bare-moe": ["--params", "47", "--active-params", "13", "--layers", "32", "--bits", "4.5", "--bandwidth", "1000", "--memory-gb", "48"],
    "bits": ["llama-3.1-8b", "--bits", "5.5"],
    "weights-gb": ["llama-3.1-8b", "--weights-gb", "4.9"],
    "custom-bandwidth": ["llama-3.1-8b", "--hw", "rtx-4090", "--bandwidth", "800", "--tflops", "100"],
    "batch-16": ["llama-3.1-8b", "--hw", "h100-sxm", "-q", "bf16", "--batch", "16"],
    "batch-sessions": ["llama-3.1-8b", "--hw", "h100-sxm", "--batch", "64", "--sessions", "128"],
    "context-32k": ["llama-3.1-8b", "--context", "32768", "--prompt", "2048", "--output", "512"],
    "prompt-0": ["llama-3.1-8b", "--prompt", "0"],
    "tp-2": ["llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8", "--tp", "2"],
    "tp-4-pcie": ["llama-3.1-70b", "--hw", "rtx-4090", "--tp", "4", "--link", "pcie4x16"],
    "pp-2": ["llama-3.1-70b", "--hw", "h100-sxm", "-q", "bf16", "--pp", "2"],
    "offload-cpu": ["llama-3.1-70b", "--hw", "rtx-4090", "--gpu-layers", "40"],
    "offload-share-stream": ["llama-3.1-70b", "--hw", "rtx-4090", "--gpu-layers", "0.5", "--offload-mode", "stream"],
    "offload-cpu-hw": ["llama-3.1-8b", "--hw", "rtx-4090", "--gpu-layers", "20", "--cpu-hw", "ddr5-dual-channel"],
    "speculative": ["llama-3.1-70b", "--hw", "h100-sxm", "-q", "fp8", "--draft", "llama-3.2-1b"],
    "speculative-full": ["llama-3.1-8b", "--draft", "llama-3.2-1b", "--acceptance", "0.8", "--draft-tokens", "6", "--draft-quant", "q8_0"],
    "kv-fp8": ["llama-3.1-8b", "--hw", "h100-sxm", "--kv-dtype", "fp8", "--context", "65536"],
    "kv-q4": ["llama-3.1-8b", "--kv-dtype", "q4_0", "--context", "16384"],
    "quant-awq-vllm": ["llama-3.1-8b", "--hw", "a100-80gb-sxm", "-q", "awq", "-e", "vllm"],
    "engine-ollama-metal": ["llama-3.1-8b", "--hw", "m2-ultra-76c", "-e", "ollama", "--backend", "metal"],
    "engine-mlx": ["llama-3.1-8b", "--hw", "m2-ultra-76c", "-e", "mlx", "-q", "mlx-4bit"],
    "does-not-fit": ["llama-3.1-70b", "--hw", "rtx-4090", "-q", "fp16"],
    "cpu": ["llama-3.1-8b", "--hw", "ddr5-dual-channel"],
}

VALIDATE_MODES: dict[str, list[str]] = {"fitted": [], "baseline-ceiling": ["--baseline", "ceiling"], "loho": ["--loho"]}

# fixed fake bench summaries graded against the default estimate: (decode tok/s, prefill tok/s, failed)
GRADING_RUNS: dict[str, tuple[float, float | None, int]] = {
    "inside": (150.0, 9000.0, 0),
    "above-ceiling": (400.0, None, 0),
    "far-below": (20.0, 500.0, 0),
    "failures": (140.0, None, 2),
}


def cli_output(args: list[str]) -> str:
    from tokometer.cli import cli

    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def estimate_json(name: str) -> str:
    return cli_output(["estimate", *ESTIMATE_CASES[name], "--json"])


def _rounded(value: Any) -> Any:
    """Floats to 9 significant digits: a fit's last bits differ between numpy/BLAS builds (the same
    rows fitted on two machines agreed to 1e-12), while a change that matters moves far more."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def validate_json(mode: str) -> str:
    text = cli_output(["validate", str(CASES_CSV), *VALIDATE_MODES[mode], "--json"]).replace(str(CASES_CSV), "CASES")
    return json.dumps(_rounded(json.loads(text)), indent=2, ensure_ascii=False) + "\n"


def grading_json(name: str) -> str:
    from tokometer.bench.grading import grade, prediction_headline
    from tokometer.bench.metrics import stats

    decode, prefill, failed = GRADING_RUNS[name]
    estimate = json.loads(estimate_json("default"))
    summary: dict[str, Any] = {
        "decode_tps": stats([decode * 0.97, decode, decode * 1.02]),
        "requests_ok": 3,
        "requests_failed": failed,
        "requests_total": 3 + failed,
    }
    if prefill is not None:
        summary["prefill_tps"] = stats([prefill])
    out = {"headline": prediction_headline(estimate), "grading": grade(summary, estimate)}
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


# name -> `tokometer bench http://fake:1` arguments (each adds --json), run on the fake server and clock
BENCH_CASES: dict[str, list[str]] = {
    "speed": ["--runs", "2", "--max-tokens", "6", "--prompt-tokens", "40"],
    "graded": ["--runs", "2", "--max-tokens", "6", "--prompt-tokens", "40", "--predict-model", "llama-3.1-8b", "--hw", "rtx-4090"],
    "concurrency": ["--concurrency", "1,2", "--runs", "1", "--max-tokens", "5", "--predict-model", "llama-3.1-8b", "--hw", "h100-sxm"],
    "depth": ["--depth", "0,64", "--runs", "1", "--max-tokens", "5", "--predict-model", "llama-3.1-8b", "--hw", "rtx-4090"],
}
FAKE_URL = "http://fake:1"
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00")


class _Chunks(httpx.AsyncByteStream):
    """A response body read in one chunk per SSE event (one clock read each)."""

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part


def _fake_server(request: httpx.Request) -> httpx.Response:
    """An OpenAI completions server: N tokens for max_tokens N, usage counted in words."""
    if request.url.path == "/v1/models":
        return httpx.Response(200, json={"data": [{"id": "fake-model"}]})
    if request.url.path != "/v1/completions":
        return httpx.Response(404, json={"error": "no such route"})
    body = json.loads(request.content)
    tokens = int(body.get("max_tokens") or 1)
    prompt_tokens = len(str(body.get("prompt", "")).split())
    parts = [{"choices": [{"text": f" w{i}"}]} for i in range(tokens - 1)]
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": tokens}
    parts.append({"choices": [{"text": " end", "finish_reason": "length"}], "usage": usage})
    events = [f"data: {json.dumps(p)}\n\n".encode() for p in parts] + [b"data: [DONE]\n\n"]
    return httpx.Response(200, stream=_Chunks(events))


class _FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 0.01
        return self.now


@contextlib.contextmanager
def fake_bench_home() -> Iterator[None]:
    """A fresh TOKOMETER_HOME, and `tokometer bench` wired to the fake server and clock."""
    from tokometer.bench.runner import Runner
    from tokometer.catalog import clear_caches
    from tokometer.usecases import benchmark as usecase

    original = usecase.benchmark
    old_home = os.environ.get("TOKOMETER_HOME")
    with tempfile.TemporaryDirectory() as home:
        os.environ["TOKOMETER_HOME"] = home
        clear_caches()
        fake = functools.partial(Runner, transport=httpx.MockTransport(_fake_server), clock=_FakeClock())
        usecase.benchmark = functools.partial(original, runner=fake)  # type: ignore[assignment]
        try:
            yield
        finally:
            usecase.benchmark = original  # type: ignore[assignment]
            if old_home is None:
                os.environ.pop("TOKOMETER_HOME", None)
            else:
                os.environ["TOKOMETER_HOME"] = old_home
            clear_caches()


def _undated(text: str) -> str:
    return _DATE.sub("DATE", text)


def bench_json(name: str) -> str:
    with fake_bench_home():
        return _undated(cli_output(["bench", FAKE_URL, *BENCH_CASES[name], "--json"]))


def runs_json(name: str) -> str:
    """`runs show 1 --json`, `runs show 1 --requests --json` and `runs list --json` after one fake bench."""
    with fake_bench_home():
        cli_output(["bench", FAKE_URL, *BENCH_CASES[name], "--json"])
        shown = {
            "show": json.loads(cli_output(["runs", "show", "1", "--json"])),
            "show_requests": json.loads(cli_output(["runs", "show", "1", "--requests", "--json"])),
            "list": json.loads(cli_output(["runs", "list", "--json"])),
        }
    return _undated(json.dumps(shown, indent=2) + "\n")


def runs_imported_json() -> str:
    """`runs show` and `runs list --json` of imported runs: llama-bench at two depths, vLLM detailed."""
    from test_bench_importers import llama_bench, vllm_detailed

    with fake_bench_home(), tempfile.TemporaryDirectory() as folder:
        files = {"lb.json": llama_bench((0, 4096)), "vl.json": vllm_detailed()}
        for name, data in files.items():
            (Path(folder) / name).write_text(json.dumps(data), encoding="utf-8")
        cli_output(["runs", "import", *(str(Path(folder) / name) for name in files)])
        shown = {
            "llama-bench": json.loads(cli_output(["runs", "show", "1", "--json"])),
            "vllm": json.loads(cli_output(["runs", "show", "2", "--requests", "--json"])),
            "list": json.loads(cli_output(["runs", "list", "--json"])),
        }
    return _undated(json.dumps(shown, indent=2).replace(folder, "FOLDER") + "\n")


RUNS_CASES = ("speed", "concurrency")


def all_outputs() -> dict[str, str]:
    """file name -> the text the current code produces."""
    out = {f"estimate-{n}.json": estimate_json(n) for n in ESTIMATE_CASES}
    out |= {f"validate-{m}.json": validate_json(m) for m in VALIDATE_MODES}
    out |= {f"grading-{n}.json": grading_json(n) for n in GRADING_RUNS}
    out |= {f"bench-{n}.json": bench_json(n) for n in BENCH_CASES}
    out |= {f"runs-{n}.json": runs_json(n) for n in RUNS_CASES}
    out["runs-imported.json"] = runs_imported_json()
    return out


def write_cases_subset(source: Path, every: int = 12) -> None:
    """A fixed subset of the shared calibration measurements (the header and every `every`th row)."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    import csv
    import io

    rows = list(csv.reader(io.StringIO("".join(lines))))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(rows[0])
    for row in rows[1::every]:
        writer.writerow(row)
    CASES_CSV.write_text(buf.getvalue(), encoding="utf-8")


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    # arguments: a calibration CSV to take the validate subset from, and/or file-name prefixes to rewrite
    csvs = [a for a in sys.argv[1:] if a.endswith(".csv")]
    only = [a for a in sys.argv[1:] if not a.endswith(".csv")]
    if csvs:
        write_cases_subset(Path(csvs[0]))
    for name, text in all_outputs().items():
        if only and not any(name.startswith(prefix) for prefix in only):
            continue
        (GOLDEN / name).write_text(text, encoding="utf-8")
        print("wrote", name)
