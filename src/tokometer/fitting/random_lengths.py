"""The lengths a benchmark client's "random" dataset drew, for a published serving row that states only the nominal
input/output lengths (flag `nominal_random_lengths`).

The two clients the published rows name draw differently at their defaults:

- SGLang's `sglang.bench_serving`: each length uniform in [max(int(L * r), 1), L] with `--random-range-ratio r`,
  default 0, so [1, L] (python/sglang/bench_serving.py, `sample_random_requests`).
- vLLM's `vllm bench serve` (and `benchmarks/benchmark_serving.py` before it): every length L at the default
  (`RandomDataset`: uniform in [L * (1 - r), L * (1 + r)] with r = 0 by default; the older script drew from
  [int(L * r), L] with r = 1 by default).

A row says which client ran in its notes or dataset cell, may print the range ratio it set, and may print the
run's token totals (`total_input_tokens=640` over `completed=5`): a mean equal to the nominal length (within 2 %)
means every request had that length, whatever the client; a lower mean from a client other than SGLang's is
vLLM's fixed length ended early by the model's end-of-sequence token (no `--ignore-eos`), read at that mean. A row
that says none of this keeps SGLang's default.
"""

from __future__ import annotations

import re

from tokometer.costmodel.serving import LengthDist, fixed

_RANGE_RATIO = re.compile(r"random[-_ ]range[-_ ]ratio[ =:]+([0-9]*\.?[0-9]+)", re.IGNORECASE)
_TOTAL_IN = re.compile(r"total[_ ]input[_ ]tokens:?[ =]*([\d,]+)", re.IGNORECASE)
_TOTAL_OUT = re.compile(r"total[_ ](?:output|generated)[_ ]tokens:?[ =]*([\d,]+)", re.IGNORECASE)
_COMPLETED = re.compile(r"\bcompleted[ =:]+(\d+)", re.IGNORECASE)
_VLLM_CLIENT = ("vllm bench serve", "benchmark_serving.py", "vllm/benchmarks")
_SGLANG_CLIENT = ("sglang.bench_serving", "bench_serving --backend sglang")
SAME_MEAN = 0.02  # a printed mean this close to the nominal length: fixed lengths


def _client(text: str) -> str | None:
    if any(word in text for word in _SGLANG_CLIENT):
        return "sglang"
    if any(word in text for word in _VLLM_CLIENT):
        return "vllm"
    return None


def _printed_mean(pattern: re.Pattern[str], text: str, requests: float | None) -> float | None:
    found = pattern.search(text)
    done = _COMPLETED.search(text)
    n = float(done.group(1)) if done else requests
    if found is None or not n:
        return None
    return float(found.group(1).replace(",", "")) / n


def printed_means(text: str, requests: float | None) -> tuple[float, float] | None:
    """Mean (input, output) tokens per request where the row prints the run's totals (`vllm bench serve`: "Total input
    tokens 219171, Total generated tokens 200752"; a JSON's `total_input_tokens=640`) over its completed requests
    (`completed=5`, else `requests`); None unless both totals are printed."""
    low = text.lower()
    mean_in, mean_out = _printed_mean(_TOTAL_IN, low, requests), _printed_mean(_TOTAL_OUT, low, requests)
    return (mean_in, mean_out) if mean_in is not None and mean_out is not None else None


def _one(nominal: int, client: str | None, ratio: float | None, mean: float | None) -> LengthDist:
    if ratio is not None:
        if client == "vllm":
            lo, hi = int(nominal * (1 - ratio)), int(nominal * (1 + ratio))
        else:
            lo, hi = max(int(nominal * ratio), 1), nominal
        return fixed(nominal) if hi <= lo else LengthDist("uniform", max(lo, 1), hi)
    if mean is not None and abs(mean - nominal) <= SAME_MEAN * nominal:
        return fixed(nominal)
    if client != "sglang" and mean is not None and mean >= 1:
        return fixed(round(mean))  # vLLM's fixed lengths, ended early (no --ignore-eos): the run's own mean
    if client == "vllm":
        return fixed(nominal)
    return LengthDist("uniform", 1, nominal)  # sglang.bench_serving's default ratio 0


def random_lengths(text: str, prompt: int, gen: int, requests: float | None) -> tuple[LengthDist, LengthDist]:
    """(input, output) length distributions of a nominal random-dataset row; `text` is the row's notes, dataset,
    backend and heading cells, `requests` its `num_requests`."""
    low = text.lower()
    client = _client(low)
    found = _RANGE_RATIO.search(low)
    ratio = float(found.group(1)) if found else None
    return (_one(prompt, client, ratio, _printed_mean(_TOTAL_IN, low, requests)),
            _one(gen, client, ratio, _printed_mean(_TOTAL_OUT, low, requests)))
