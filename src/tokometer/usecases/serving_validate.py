"""Validate the serving simulator on published serving rows (`calibration_data/serving.csv`).

Rows that describe the same run (source, engine, hardware, model, TP, precision, lengths, scenario,
rate, concurrency, batch) are simulated once; each row's metric is read from that run:
`tput_out`, `tput_total`, `tput_in`, `req_per_s`, and `ttft/tpot/itl/e2e` with a unit (`ms`, `s`,
`ns`) and a statistic (`mean`, `p50`, `p90`, `p99`, `min`, `max`). Scenarios:

- `offline`: every request at t = 0; simulated with `WAVES` full batches of requests (at most
  `MAX_SIM_REQUESTS`, never more than the source ran): the steady state, not the published count;
- `static-batch`: one batch of `batch_size` requests of fixed lengths under the engine's policy;
- `online-rate`: Poisson arrivals at `request_rate`; `online-concurrency`: closed-loop clients.

ShareGPT runs do not print their length distribution. Their mean lengths come from the same
source's own throughput rows (output tokens per request = tput_out / req_per_s, input = (tput_total
- tput_out) / req_per_s); the shape is a lognormal with sigma 1 (ShareGPT is heavy-tailed), each length capped at 1024
tokens as the benchmark scripts' filters do (prompt <= 1024, prompt + output <= 2048).

A row that cannot be predicted (model not in the catalog, unknown metric, a statistic the
simulator does not produce) comes back with its reason; nothing is dropped and nothing is fatal.
The naive baseline is what `tokometer estimate --batch B` said before the simulator: one decode
step of B streams at the prompt depth, the batch's prefill never charged.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.costmodel.serving import (
    LengthDist,
    ServingEfficiency,
    ServingResult,
    Workload,
    fixed,
)
from tokometer.errors import InputError, TokometerError
from tokometer.fitting.rows import Cells

if TYPE_CHECKING:
    from tokometer.usecases.simulate import Deployment

MAX_SIM_REQUESTS = 2000
WAVES = 4  # offline runs simulate this many full batches of requests (fewer when the source ran fewer)
MIN_OFFLINE_REQUESTS = 64
SIGMA_SHAREGPT = 1.0
SHAREGPT_MAX_TOKENS = 1024  # the benchmark scripts drop prompts > 1024 and prompt + output > 2048 tokens
# mean (input, output) tokens per request of each source's ShareGPT runs, from its own rows, per
# tokenizer: the same conversations are a different number of tokens under another vocabulary
# (InternLM's 103k-token vocabulary cuts LMDeploy's ShareGPT sample by a fifth against Llama 2's 32k)
SHAREGPT_MEANS: dict[tuple[str, str | None], tuple[float, float]] = {
    # (tput_total - tput_out) / req_per_s, tput_out / req_per_s of its first run with each tokenizer
    ("LMDEPLOY-A100-V010", "llama2"): (265.0, 249.0),  # Llama-2-7B-chat, 64 clients
    ("LMDEPLOY-A100-V010", "internlm"): (223.0, 199.5),  # InternLM-chat-20B, 64 clients
    ("SGL-BENCH-VLLM060", None): (230.0, 194.0),  # output from the offline rows; input not printed: assumed
}
METRIC = re.compile(r"^(ttft|tpot|itl|e2e)(?:_(ms|s|ns))?(?:_(mean|p50|p90|p99|min|max))?$")
UNIT_S = {"ms": 1e-3, "s": 1.0, "ns": 1e-9, None: 1e-3}
THROUGHPUT = ("tput_out", "tput_total", "tput_in", "req_per_s")
HARDWARE_IDS = {"nvidia_a100_80gb": "a100-80gb-sxm", "nvidia_gh200": "gh200"}
# LMDeploy v0.1 (TurboMind LlamaBatch: InternalThreadEntry runs ContextDecode, then Generate, every
# iteration): each prompt admitted in an iteration is prefilled whole in that iteration, in
# sub-batches of max_context_token_num * session_len tokens, before the one decode step of the whole
# batch; no chunking across iterations (TurboMind's max_prefill_token_num chunks came later).
TURBOMIND_V01 = {"chunked_prefill": False, "max_num_batched_tokens": 1 << 20}
# The engine parameters its request-throughput benchmark (profile_rpm = 1: the closed-loop rows) ran
# with, from benchmark/config/llama_{7b,13b,70b}.ini beside benchmark.sh at the source's commit:
# max_batch_size, and cache_max_entry_count as a count of KV blocks of cache_block_seq_len = 128
# tokens (TurboMind v0.1's default block length). The static tables do not say theirs (the 7B and
# 70B configs switch profile_generation off), so static rows keep the engine defaults.
# InternLM-chat-20B: benchmark/config/internlm_20b.ini (max_batch_size 128, cache_max_entry_count 700,
# tp 2), read at lmdeploy commit 106250ca, whose llama_*.ini carry the same values as above.
TURBOMIND_V01_BLOCK_TOKENS = 128
TURBOMIND_V01_CONFIG = {
    "Llama-2-7B": (128, 1000), "Llama-2-13B": (128, 500), "Llama-2-70B": (256, 4000), "InternLM-chat-20B": (128, 700),
}


SCENARIOS = ("offline", "static-batch", "online-rate", "online-concurrency")
SERVING_COLUMNS = ("scenario", "request_rate", "concurrency", "num_requests", "dataset", "kv_cache_dtype", "max_num_seqs_or_batch")


def is_serving_file(path: str | Path) -> bool:
    """True when the CSV's header has a serving column (`scenario`, `request_rate`, `concurrency`...)."""
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False  # the reader proper reports what is wrong with the file
    return any(c.strip() in SERVING_COLUMNS for c in header)


def default_data_path() -> Path:
    return Path(str(resources.files("tokometer") / "calibration_data" / "serving.csv"))


@dataclass(frozen=True)
class Row(Cells):
    row_id: str
    raw: dict[str, str]
    metric: str
    value: float

    @property
    def source(self) -> str:
        return self.text("source_id")

    @property
    def scenario(self) -> str:
        return self.text("scenario")

    @property
    def run_key(self) -> tuple[str, ...]:
        keys = ("source_id", "engine", "hardware_id", "model", "parallelism", "quant", "batch_size",
                "prompt_tokens", "gen_tokens", "scenario", "request_rate", "concurrency", "num_requests")
        return tuple(self.text(k) for k in keys)


@dataclass
class RowResult:
    row: Row
    predicted: float | None = None
    naive: float | None = None
    reason: str | None = None

    @property
    def ape(self) -> float | None:
        return None if self.predicted is None else abs(self.predicted - self.row.value) / self.row.value

    @property
    def naive_ape(self) -> float | None:
        return None if self.naive is None else abs(self.naive - self.row.value) / self.row.value

    def to_dict(self) -> dict[str, Any]:
        return {
            "row_id": self.row.row_id, "source": self.row.source, "scenario": self.row.scenario,
            "metric": self.row.metric, "measured": self.row.value, "predicted": self.predicted,
            "ape": self.ape, "naive": self.naive, "naive_ape": self.naive_ape, "reason": self.reason,
        }


def read_rows(path: str | Path) -> tuple[list[Row], list[RowResult]]:
    """Parse the CSV; a row with a missing or non-numeric value is returned as unpredictable."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in ("metric", "value", "scenario") if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
    rows: list[Row] = []
    bad: list[RowResult] = []
    for i, raw in enumerate(reader, start=2):
        rid = (raw.get("row_id") or f"line {i}").strip()
        try:
            value = float((raw.get("value") or "").replace(",", ""))
        except ValueError:
            bad.append(RowResult(Row(rid, raw, raw.get("metric", ""), math.nan), reason=f"line {i}: value {raw.get('value')!r} is not a number"))
            continue
        if not (math.isfinite(value) and value > 0):
            bad.append(RowResult(Row(rid, raw, raw.get("metric", ""), value), reason=f"line {i}: value must be positive"))
            continue
        rows.append(Row(rid, raw, (raw.get("metric") or "").strip(), value))
    return rows, bad


# ---------------------------------------------------------------- one run per group


@dataclass
class Run:
    """The rows of one published run, the deployment and workload they describe."""

    rows: list[Row]
    deploy_kwargs: dict[str, Any] = field(default_factory=dict)
    workload: Workload | None = None
    batch: int = 1
    reason: str | None = None
    kv_cache_tokens: float | None = None  # KV cache size the source configured, when it states one

    @property
    def source(self) -> str:
        return self.rows[0].source

    @property
    def engine(self) -> str:
        return str(self.deploy_kwargs.get("engine", ""))


def _engine(row: Row) -> str | None:
    name = row.text("engine").lower()
    return {"tensorrt-llm": "tensorrt-llm", "lmdeploy": "lmdeploy", "sglang": "sglang", "vllm": "vllm"}.get(name)


def plan_run(rows: list[Row]) -> Run:
    from tokometer.catalog import hardware_catalog, model_catalog

    run = Run(rows)
    row = rows[0]
    engine = _engine(row)
    if engine is None:
        run.reason = f"engine {row.text('engine')!r} has no serving scheduler"
        return run
    preset = model_catalog().find(row.text("model"))
    if preset is None:
        run.reason = f"model {row.text('model')!r} is not in the model catalog (its architecture is needed for KV and attention)"
        return run
    hid = row.text("hardware_id")
    hw = hardware_catalog().find(HARDWARE_IDS.get(hid, hid))
    if hw is None:
        from tokometer.fitting.validation import _calibration_index

        hw = _calibration_index().get(hid)
    if hw is None:
        run.reason = f"hardware {hid!r} is not in the catalog"
        return run
    tp = int(row.text("parallelism").removeprefix("tp=") or 1) if row.text("parallelism").startswith("tp=") else 1
    quant = {"fp16": "fp16", "fp8": "fp8", "": "bf16"}.get(row.text("quant").lower(), row.text("quant").lower())
    kwargs: dict[str, Any] = {"model": preset.spec, "hw": hw, "quant": quant, "engine": engine, "tp": tp}
    if quant == "fp8":
        kwargs["kv_dtype"] = "fp8"
    if engine == "tensorrt-llm":
        kwargs["memory_fraction"] = 0.95  # kv_cache_free_gpu_mem_fraction stated by the source
    if engine == "lmdeploy" and row.text("engine_version").startswith("0.1"):
        kwargs.update(TURBOMIND_V01)
        config = next((v for k, v in TURBOMIND_V01_CONFIG.items() if row.text("model").startswith(k)), None)
        if config is not None and row.scenario == "online-concurrency":
            kwargs["max_num_seqs"] = config[0]
            run.kv_cache_tokens = float(config[1] * TURBOMIND_V01_BLOCK_TOKENS)
    multi = re.search(r"--num-scheduler-steps[ =](\d+)", row.text("backend"))
    if multi:
        kwargs["scheduler_steps"] = int(multi.group(1))  # launch flags the source printed
    scenario = row.scenario
    prompt, gen = row.number("prompt_tokens"), row.number("gen_tokens")
    n = int(row.number("num_requests") or 1000)
    lengths = _lengths(row, prompt, gen, preset.spec.tokenizer)
    if lengths is None:
        run.reason = "prompt/output lengths not stated and the dataset is not known"
        return run
    p_dist, o_dist = lengths
    if scenario == "offline":
        run.workload = Workload("offline", min(n, MAX_SIM_REQUESTS), p_dist, o_dist)
    elif scenario == "static-batch":
        b = int(row.number("batch_size") or row.number("max_num_seqs_or_batch") or 1)
        run.batch = b
        kwargs["max_num_seqs"] = b
        run.workload = Workload("offline", b, p_dist, o_dist)
    elif scenario == "online-rate":
        rate = row.number("request_rate")
        if not rate:
            run.reason = "online-rate row without a request_rate"
            return run
        run.workload = Workload("poisson", min(n, MAX_SIM_REQUESTS), p_dist, o_dist, rate_per_s=rate)
    elif scenario == "online-concurrency":
        c = int(row.number("concurrency") or 0)
        if c < 1:
            run.reason = "online-concurrency row without a concurrency"
            return run
        run.batch = c
        run.workload = Workload("closed", min(n, MAX_SIM_REQUESTS), p_dist, o_dist, concurrency=c)
    elif not scenario:
        run.reason = "no scenario: a single-stream row in a serving file (validate it from a file without serving columns)"
        return run
    else:
        run.reason = f"scenario {scenario!r} is not simulated (known: {', '.join(SCENARIOS)})"
        return run
    run.deploy_kwargs = kwargs
    return run


def _lengths(
    row: Row, prompt: float | None, gen: float | None, tokenizer: str | None
) -> tuple[LengthDist, LengthDist] | None:
    if prompt and gen:
        return fixed(int(prompt)), fixed(int(gen))
    means = SHAREGPT_MEANS.get((row.source, tokenizer)) or SHAREGPT_MEANS.get((row.source, None))
    if "sharegpt" in row.text("dataset").lower() and means is not None:
        mean_in, mean_out = means
        shrink = math.exp(SIGMA_SHAREGPT**2 / 2.0)
        return (LengthDist("lognormal", mean_in / shrink, SIGMA_SHAREGPT, max_tokens=SHAREGPT_MAX_TOKENS),
                LengthDist("lognormal", mean_out / shrink, SIGMA_SHAREGPT, max_tokens=SHAREGPT_MAX_TOKENS))
    return None


def group_runs(rows: Iterable[Row]) -> list[Run]:
    groups: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.run_key].append(r)
    return [plan_run(g) for g in groups.values()]


def read_metric(result: ServingResult, metric: str) -> tuple[float | None, str | None]:
    """The simulated value of a published metric, in the metric's own unit."""
    if metric in THROUGHPUT:
        value = {"tput_out": result.tput_out_tok_s, "tput_total": result.tput_total_tok_s,
                 "tput_in": result.tput_in_tok_s, "req_per_s": result.req_per_s}[metric]
        return value, None
    m = METRIC.match(metric)
    if m is None:
        return None, f"metric {metric!r} is not one the simulator produces"
    kind, unit, stat = m.groups()
    summary = getattr(result, f"{kind}_s")
    value = getattr(summary, stat or "mean")
    if value is None:
        return None, f"no {kind} observed in the simulated run"
    return value / UNIT_S[unit], None


def sized_workload(run: Run, dep: Deployment) -> Workload:
    """Offline runs: enough requests for `WAVES` full batches (the steady state), at most the published count."""
    wl = run.workload
    assert wl is not None
    if wl.arrival != "offline" or run.rows[0].scenario != "offline":
        return wl
    per_request = wl.prompt.mean + wl.output.mean + dep.policy.block_size_tokens
    batch = max(1.0, min(dep.policy.max_num_seqs, dep.kv_capacity_tokens / per_request))
    return replace(wl, num_requests=int(min(wl.num_requests, max(MIN_OFFLINE_REQUESTS, WAVES * batch))))


def deploy_run(run: Run, efficiency: ServingEfficiency) -> Deployment:
    from tokometer.usecases.simulate import deploy

    kwargs = dict(run.deploy_kwargs)
    dep = deploy(kwargs.pop("model"), kwargs.pop("hw"), efficiency=efficiency, check_fit=False, **kwargs)
    return dep if run.kv_cache_tokens is None else replace(dep, kv_capacity_tokens=run.kv_cache_tokens)


def simulate_run(run: Run, efficiency: Callable[[str], ServingEfficiency], seed: int = 0) -> ServingResult:
    from tokometer.usecases.simulate import run as run_sim

    dep = deploy_run(run, efficiency(run.engine))
    return run_sim(dep, sized_workload(run, dep), seed=seed)


def naive_run(run: Run) -> dict[str, float]:
    """One decode step of B streams at the prompt depth (`estimate --batch B`), prefill not charged."""
    from tokometer.usecases.estimate import estimate

    kw = run.deploy_kwargs
    wl = run.workload
    assert wl is not None
    prompt = int(wl.prompt.mean)
    out = int(wl.output.mean)
    b = run.batch if run.rows[0].scenario in ("static-batch", "online-concurrency") else (
        1 if run.rows[0].scenario == "online-rate" else 256)
    e = estimate(kw["model"], kw["hw"], quant=kw["quant"], engine=kw["engine"] if kw["engine"] != "lmdeploy" else "tensorrt-llm",
                 tp=kw["tp"], kv_dtype=kw.get("kv_dtype"), batch=b, prompt_tokens=prompt, output_tokens=out, advise=False)
    step = e.step.time_s
    tput_out = b / step
    return {"tput_out": tput_out, "tput_total": tput_out * (prompt + out) / out, "tput_in": tput_out * prompt / out,
            "req_per_s": tput_out / out, "ttft": e.ttft_s or math.nan, "tpot": step, "itl": step, "e2e": e.e2e_s or math.nan}


def predict(runs: Sequence[Run], efficiency: Callable[[str], ServingEfficiency], *, naive: bool = True) -> list[RowResult]:
    out: list[RowResult] = []
    for run in runs:
        if run.reason is not None:
            out += [RowResult(r, reason=run.reason) for r in run.rows]
            continue
        try:
            result = simulate_run(run, efficiency)
            base = naive_run(run) if naive else {}
        except TokometerError as exc:
            out += [RowResult(r, reason=f"cannot simulate: {exc}") for r in run.rows]
            continue
        for r in run.rows:
            value, why = read_metric(result, r.metric)
            kind = r.metric if r.metric in THROUGHPUT else r.metric.split("_")[0]
            nv = base.get(kind)
            if nv is not None and kind not in THROUGHPUT:
                m = METRIC.match(r.metric)
                nv = nv / UNIT_S[m.group(2) if m else None]
            out.append(RowResult(r, value, nv if nv is not None and math.isfinite(nv) else None, why))
    return out


# ---------------------------------------------------------------- summaries


def _summary(results: Sequence[RowResult]) -> dict[str, Any]:
    apes = [r.ape for r in results if r.ape is not None and r.reason is None]
    naive = [r.naive_ape for r in results if r.naive_ape is not None and r.reason is None]

    def pct(values: list[float], q: float) -> float | None:
        if not values:
            return None
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(math.ceil(q * len(ordered))) - 1)]

    return {
        "n": len(results),
        "scored": len(apes),
        "median_ape": statistics.median(apes) if apes else None,
        "p90_ape": pct(apes, 0.9),
        "within_15": sum(a <= 0.15 for a in apes) / len(apes) if apes else None,
        "naive_median_ape": statistics.median(naive) if naive else None,
    }


def report(results: Sequence[RowResult], **meta: Any) -> dict[str, Any]:
    by_metric: dict[str, list[RowResult]] = defaultdict(list)
    by_scenario: dict[str, dict[str, list[RowResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by_metric[r.row.metric].append(r)
        by_scenario[r.row.scenario][r.row.metric].append(r)
    return {
        **meta,
        "rows": len(results),
        "scored": sum(1 for r in results if r.ape is not None and r.reason is None),
        "metrics": {m: _summary(v) for m, v in sorted(by_metric.items())},
        "scenarios": {s: {m: _summary(v) for m, v in sorted(d.items())} for s, d in sorted(by_scenario.items())},
        "unpredictable": [r.to_dict() for r in results if r.reason is not None],
        "results": [r.to_dict() for r in results],
    }
