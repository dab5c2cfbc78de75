"""The golden cases: what `estimate --json`, `validate --json` and bench grading print, fixed in files.

`python tests/golden.py` rewrites tests/fixtures/golden/ from the current code; `test_golden.py` asserts the
output stays byte-equal, so a restructure that changes a number or a key shows up as a failing case.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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


def validate_json(mode: str) -> str:
    return cli_output(["validate", str(CASES_CSV), *VALIDATE_MODES[mode], "--json"]).replace(str(CASES_CSV), "CASES")


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


def all_outputs() -> dict[str, str]:
    """file name -> the text the current code produces."""
    out = {f"estimate-{n}.json": estimate_json(n) for n in ESTIMATE_CASES}
    out |= {f"validate-{m}.json": validate_json(m) for m in VALIDATE_MODES}
    out |= {f"grading-{n}.json": grading_json(n) for n in GRADING_RUNS}
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
    if len(sys.argv) > 1:
        write_cases_subset(Path(sys.argv[1]))
    for name, text in all_outputs().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
        print("wrote", name)
