"""Read published serving rows into runs the simulator can replay (`serving_validate` predicts them).

Rows that describe the same run (source, engine, hardware, model, TP, precision, lengths, scenario,
rate, concurrency, batch) form one `Run`: its deployment words (engine, device, precision, the
parallel layout, disaggregated pools, speculation), its workload (scenario, lengths, rate or
concurrency, the number of requests) and the reason when it cannot be replayed. How each cell is
read is described in `serving_validate`'s docstring, which scores the runs.
"""

from __future__ import annotations

import csv
import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from tokometer.costmodel.serving import LengthDist, Workload, fixed
from tokometer.errors import InputError, TokometerError
from tokometer.fitting.inferencex import (
    INFERENCEX_DISAGG_ITL,
    INFERENCEX_PREFIX,
    INFERENCEX_PROMPTS_PER_CLIENT,
    INFERENCEX_RANGE_RATIO,
    launch_flags,
)
from tokometer.fitting.parallelism import Parallelism, parse_parallelism
from tokometer.fitting.random_lengths import printed_means, random_lengths
from tokometer.fitting.reprints import drop_repeated_blocks, mark_reprinted_runs
from tokometer.fitting.rows import MAX_BATCH, Cells
from tokometer.fitting.spec_words import read_speculation
from tokometer.fitting.static_batch import STATIC_ENGINES

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
METRIC = re.compile(r"^(ttft|tpot|itl|e2e)(?:_(ms|s|ns|us))?(?:_(mean|avg|median|p50|p90|p99|min|max))?$")
UNIT_S = {"ms": 1e-3, "s": 1.0, "ns": 1e-9, "us": 1e-6, None: 1e-3}
STATISTIC = {"avg": "mean", "median": "p50"}
THROUGHPUT = ("tput_out", "tput_total", "tput_in", "req_per_s")
DEFAULT_TIME_LIMIT_S = 10.0  # per simulated run (the rows that share a setup share it)
ENGINE_NAMES = {  # engine cells as tables print them, letters and digits only
    "tensorrtllm": "tensorrt-llm", "trtllm": "tensorrt-llm", "trtllmserve": "tensorrt-llm", "trtllmbench": "tensorrt-llm",
    "tensorrt": "tensorrt-llm", "lmdeploy": "lmdeploy", "turbomind": "lmdeploy", "lmdeployturbomind": "lmdeploy",
    "sglang": "sglang", "vllm": "vllm", "vllmv1": "vllm", "vllmv0": "vllm",
    # ATOM (github.com/ROCm/ATOM, AMD's inference engine on the AITER kernels, used by InferenceX on
    # MI355X): a vLLM-style server (continuous batching, paged KV, chunked prefill, OpenAI API). Its own
    # scheduler is not in the serving catalog, so it is read as vLLM's: an assumption, said here.
    "atom": "vllm",
}
# Orchestration frontends that route to a named backend engine ("Dynamo + SGLang"): the backend schedules
FRONTENDS = ("dynamo", "nvidiadynamo")
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


# SGLang (python/sglang/srt/server_args.py, ServerArgs._handle_speculative_decoding): with EAGLE, EAGLE3,
# NEXTN, STANDALONE or NGRAM and no --max-running-requests, "Max running requests is reset to 48 for
# speculative decoding"; the request pool is then max_running_requests // attn_dp_size per DP rank
SGLANG_SPEC_MAX_RUNNING = 48

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

    def positive(self, key: str) -> float | None:
        """A cell that must be a finite number > 0: None when blank, `InputError` naming it otherwise."""
        text = self.text(key)
        if not text:
            return None
        try:
            value = float(text.replace(",", ""))  # a thousands separator as printed
        except ValueError:
            raise InputError(f"column {key!r}: {text!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"column {key!r}: {text!r} must be a finite number > 0")
        return value

    @property
    def run_key(self) -> tuple[str, ...]:
        keys = ("source_id", "engine", "engine_version", "backend", "hardware_id", "hardware_as_stated", "model",
                "parallelism", "n_devices", "quant", "kv_cache_dtype", "batch_size", "max_num_seqs_or_batch", "prompt_tokens",
                "gen_tokens", "scenario", "request_rate", "concurrency", "num_requests", "dataset")
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
    parallelism: Parallelism = field(default_factory=Parallelism)
    replicas: int = 1  # copies of the parallel group the row's n_devices holds (8 GPUs at tp=2: 4)
    static_batch: bool = False  # a published batch of `batch` requests (not resized to the steady state)
    stream_tokens: int = 1  # tokens per streamed chunk: a client's inter-token latency is the chunks' interval
    recv_interval: int = 1  # SGLang --scheduler-recv-interval the source's launch used (`recv_interval_steps`)
    adp_balance_timeout: int = 0  # TensorRT-LLM attention-DP balance timeout the launch set (`adp_balance_timeout_steps`)
    disagg: tuple[int, int] | None = None  # (prefill, decode) workers, when the source disaggregates
    tokens_per_pass: float = 1.0  # E(a, k) under speculation: the tokens one streamed chunk carries
    itl_per_token: bool = False  # the client divides each chunk's gap by its tokens (`per_token_itl_client`)
    decode_layout: dict[str, Any] = field(default_factory=dict)  # the decode workers' layout (`deploy` keywords)
    gpus: int | None = None  # every GPU of the run when its replicas differ (both pools), else None
    # (prefill, decode) GPUs a per-GPU input / output figure divides by (InferenceX disagg); None: `gpus`
    pool_gpus: tuple[int, int] | None = None
    # why the run's ITL rows are not scored, when the client's chunk size is a launch setting the row does not state
    itl_reason: str | None = None

    @property
    def source(self) -> str:
        return self.rows[0].source

    @property
    def engine(self) -> str:
        return str(self.deploy_kwargs.get("engine", ""))


def _engine(row: Row) -> str | None:
    """The serving scheduler a row's engine names: its whole name, then its words before and inside
    parentheses ("TensorRT-LLM (PyTorch backend)"), through the serving catalog's aliases."""
    from tokometer.catalog.serving import serving_engine

    name = row.text("engine")
    parts = [p.strip() for p in name.split("+")]
    backends = [p for p in parts if re.sub(r"[^a-z0-9]", "", p.lower()) not in FRONTENDS]
    if len(parts) > 1 and len(backends) == 1:
        name = backends[0]  # NVIDIA Dynamo over SGLang / TensorRT-LLM / vLLM workers: the worker's scheduler
    for candidate in [name, name.split("(")[0].strip(), *re.findall(r"\(([^)]*)\)", name)]:
        key = re.sub(r"[^a-z0-9]", "", candidate.lower())
        if key in ENGINE_NAMES:
            return ENGINE_NAMES[key]
        if key:
            try:
                return serving_engine(candidate).id
            except TokometerError:
                continue
    return None


def batch_cell(row: Row) -> int | str | None:
    """The row's batch: a whole number, "max" (every request at once, the engine choosing), or None."""
    for key in ("batch_size", "max_num_seqs_or_batch"):
        text = row.text(key)
        if not text:
            continue
        if MAX_BATCH.match(text):
            return "max"
        number = row.positive(key)
        if number is not None and number >= 1:
            return int(number)
    return None


# InferenceX's disaggregated rows: "disaggregated: prefill tp=4,ep=4 (dp-attention) x3 workers; decode ... x5 workers"
_POOLS = re.compile(r"\s*disaggregated:\s*prefill\s+(.+?)\s+x(\d+)\s+workers?\s*;\s*decode\s+(.+?)\s+x(\d+)\s+workers?\s*$",
                    re.IGNORECASE)


def _setup_reason(row: Row) -> str | None:
    """Why a row's setup is outside what the simulator models (flags the source put on it), or None."""
    flags = row.text("flag").lower().split(";")
    if "parallelism_not_stated" in flags:
        return "the source does not state the parallel layout (a best-of table): no setup to simulate"
    if "engine_fallback_kernel" in flags:
        # the source itself says the run measured a dispatch bug: a reference kernel its engine replaced in a
        # later release (its notes name the kernel and the fix); the simulator models the engine's own kernels
        return "the source states this run fell back to a reference kernel (an engine dispatch bug, fixed later): not the engine's kernels"
    split = (row.text("parallelism") + " " + row.text("backend")).lower()
    if re.search(r"\bdcp\s*=|decode context parallel", split):
        return "decode context parallelism (DCP: the KV cache split over the TP ranks) not modelled"
    if re.search(r"\bprefill[ _-]?cp\s*=|prefill context parallel", split):
        # SGLang --enable-prefill-cp: one prompt's tokens split over the ranks (attention tp 1), its own schedule
        return "prefill context parallelism (one prompt's tokens split over the GPUs) not modelled"
    pools = _POOLS.match(row.text("parallelism"))
    if pools is not None and (int(pools.group(2)) < 1 or int(pools.group(4)) < 1):
        return "disaggregated pools printed with 0 workers: no layout to simulate"
    if pools is None and (re.match(r"\s*(disaggregated|prefill|decode)\b", row.text("parallelism").lower())
                          or "pd disaggregation" in split):
        return "disaggregated prefill/decode pools whose layouts and worker counts the source does not both state"
    return None


NVLINK_RACKS = ("gb",)  # GB200/GB300 NVL72 racks: their nodes (trays) share one NVLink domain
_COUNT = re.compile(r"\(\s*\d+\s*[x×]\s*[^)]*\)|\(\s*[x×]?\d+\s*[x×]?\s*\)|^\s*\d+\s*[x×*]\s*|\s*[x×]\s*\d+\s*$", re.IGNORECASE)


def _hardware_words(stated: str) -> list[str]:
    """A printed device string without its count ("8xH20", "NVIDIA H800 GPU (16x)", "2× NVIDIA GB300
    (275GB per die)") and its trailing "GPU": the names the hardware catalog may know it by."""
    if not stated:
        return []
    text = _COUNT.sub(" ", stated).strip()
    words = [text, re.sub(r"\s*\([^)]*\)", "", text).strip()]
    words += [re.sub(r"\s+GPUs?$", "", w, flags=re.IGNORECASE).strip() for w in words]
    return [w for i, w in enumerate(words) if w and w not in words[:i]]


# Checkpoints published quantized whose catalog architecture is shared with a differently stored one:
# Moonshot's Kimi K2-Thinking, K2.5 and K2.6 ship with native INT4 weight-only quantization (their
# model cards: quantization-aware training on the MoE components; config.json: compressed-tensors
# INT4, groups of 32, symmetric, attention and shared experts left BF16: the catalog's
# `int4-experts-g32`) where Kimi K2 Instruct ships FP8.
NATIVE_FORMATS = ((re.compile(r"kimi[- ]?k2[.-]?(5|6|thinking)", re.IGNORECASE), "int4-experts-g32"),)
# A row that names the native checkpoint's format generically ("INT4", "W4A16") means that checkpoint,
# not an AWQ/GPTQ re-quantisation of all its linear layers in groups of 128.
_GENERIC_INT4 = ("int4", "w4a16", "int4weightonly", "4bit")


def _native_format(name: str, preset: Any) -> str | None:
    """The weight format a checkpoint is published in when its row's cell is blank: `NATIVE_FORMATS`,
    else its catalog preset's `default_quant` (the format its published weights are stored in)."""
    for pattern, word in NATIVE_FORMATS:
        if pattern.search(name):
            return word
    return getattr(preset, "default_quant", None)


def _checkpoint_word(word: str, name: str) -> str:
    """`word` (a row's quant cell), read as the checkpoint's own format when it names that format
    generically: "INT4" on a Kimi K2.5 row is Moonshot's INT4 checkpoint (`NATIVE_FORMATS`)."""
    if re.sub(r"[^a-z0-9]", "", word.lower()) in _GENERIC_INT4:
        for pattern, native in NATIVE_FORMATS:
            if pattern.search(name):
                return native
    return word


# SGLang's own benchmark client on its native endpoint (`python -m sglang.bench_serving --backend sglang`,
# `async_request_sglang_generate` in python/sglang/bench_serving.py) reads each streamed chunk's
# `meta_info.completion_tokens` and records `chunk_gap / num_new_tokens` once per new token, so its ITL is
# per token whatever a chunk carries (a speculative verify pass's accepted tokens, a stream interval).
# Every speculative SGL cookbook run prints a mean ITL within 3 % of its mean TPOT (GLM-5 at one client
# 7.80 / 7.54 ms with an accept length of 3.48, DeepSeek-V3 25.41 / 25.04 ms).
_PER_TOKEN_ITL_CLIENT = re.compile(r"sglang\.bench_serving\b[^;]*?--backend[ =](?:sglang|sglang-native)(?![\w-])")


def per_token_itl_client(notes: str) -> bool:
    """Whether the row's benchmark command is a client that times ITL per token, not per streamed chunk."""
    return _PER_TOKEN_ITL_CLIENT.search(notes) is not None


def _precision(word: str, hw: Any, engine: str, kv_cell: str) -> Any:
    """`read_precision`, then with the cells' parenthetical notes dropped ("BF16 (from model name)",
    "auto (BF16)"): the word before them is what the source set."""
    from tokometer.fitting.quant_words import read_precision

    try:
        return read_precision(word, hw, engine, kv_cell)
    except InputError:
        bare = [re.sub(r"\s*\(.*$", "", w).strip() for w in (word, kv_cell)]
        if bare == [word, kv_cell]:
            raise
        return read_precision(bare[0], hw, engine, bare[1])


def plan_run(rows: list[Row]) -> Run:
    from tokometer.catalog import hardware_catalog
    from tokometer.fitting.model_words import find_model, precision_in_name

    run = Run(rows)
    row = rows[0]
    engine = _engine(row)
    if engine is None:
        run.reason = f"engine {row.text('engine')!r} has no serving scheduler"
        return run
    preset = find_model(row.text("model"))
    if preset is None:
        from tokometer.fitting.aliases import resolve_model

        found = resolve_model(row.text("model"), row.source, row.positive("total_params_b"))
        preset = found[0] if found is not None else None
    if preset is None:
        from tokometer.fitting.aliases import unmodelled_model_reason

        lacking = unmodelled_model_reason(row.text("model"), row.source)
        run.reason = (f"model {row.text('model')!r} has an architecture the accounting does not model ({lacking})" if lacking
                      else f"model {row.text('model')!r} is not in the model catalog (its architecture is needed for KV and attention)")
        return run
    hid = row.text("hardware_id")
    hw = hardware_catalog().find(HARDWARE_IDS.get(hid, hid))
    if hw is None:
        from tokometer.fitting.validation import _calibration_index

        hw = _calibration_index().get(hid)
    for words in _hardware_words(row.text("hardware_as_stated")) if hw is None else []:
        hw = hardware_catalog().find(words)
        if hw is not None:
            break
    if hw is None:
        stated = row.text("hardware_as_stated")
        run.reason = (f"hardware {hid or stated!r} is not in the catalog" if hid or not stated.lower().startswith("not stated")
                      else f"hardware not stated by the source ({stated!r})")
        return run
    why = _setup_reason(row)
    if why:
        run.reason = why
        return run
    n_devices = int(row.positive("n_devices") or 0)
    pools = _POOLS.match(row.text("parallelism"))
    try:
        if pools is not None:  # the prefill workers' layout here, the decode workers' in `run.decode_layout`
            par = parse_parallelism(pools.group(1), None)
            dec = parse_parallelism(pools.group(3), None)
            run.disagg = (int(pools.group(2)), int(pools.group(4)))
            run.decode_layout = _layout_kwargs(dec, hw)
            run.gpus = run.disagg[0] * par.n_gpus + run.disagg[1] * dec.n_gpus
            if row.source.startswith(INFERENCEX_PREFIX):
                run.pool_gpus = (run.disagg[0] * par.n_gpus, run.disagg[1] * dec.n_gpus)
            n_devices = 0
        else:
            par = parse_parallelism(row.text("parallelism"), n_devices or None)
        tp, dp, ep = par.layout()
        if run.disagg is not None:
            run.replicas = sum(run.disagg)
            if dec.layout()[2] > 1 and not preset.spec.is_moe:
                raise InputError(f"ep {dec.layout()[2]} on a dense model ({row.text('model')!r})")
    except InputError as exc:
        run.reason = str(exc)
        return run
    if ep > 1 and not preset.spec.is_moe:
        run.reason = f"ep {ep} on a dense model ({row.text('model')!r})"
        return run
    run.parallelism = par
    if n_devices > par.n_gpus:
        if n_devices % par.n_gpus:
            run.reason = f"n_devices {n_devices} is not a whole number of {par.n_gpus}-GPU groups ({row.text('parallelism')})"
            return run
        run.replicas = n_devices // par.n_gpus
    try:
        # a blank cell: the checkpoint's name, else the format the checkpoint ships in (DeepSeek's FP8,
        # gpt-oss's MXFP4, Kimi K2.5's INT4), else BF16
        word = row.text("quant") or precision_in_name(row.text("model")) or _native_format(row.text("model"), preset) or ""
        word = _checkpoint_word(word, row.text("model"))
        precision = _precision(word, hw, engine, row.text("kv_cache_dtype"))
    except InputError as exc:
        run.reason = str(exc)
        return run
    kwargs: dict[str, Any] = {"model": preset.spec, "hw": hw, "quant": precision.quant, "engine": engine,
                              **_layout_kwargs(par, hw)}
    if precision.kv_dtype is not None:
        kwargs["kv_dtype"] = precision.kv_dtype
    if engine == "tensorrt-llm":
        kwargs["memory_fraction"] = 0.95  # kv_cache_free_gpu_mem_fraction stated by the source
    if engine == "lmdeploy" and row.text("engine_version").startswith("0.1"):
        kwargs.update(TURBOMIND_V01)
        config = next((v for k, v in TURBOMIND_V01_CONFIG.items() if row.text("model").startswith(k)), None)
        if config is not None and row.scenario == "online-concurrency":
            kwargs["max_num_seqs"] = config[0]
            run.kv_cache_tokens = float(config[1] * TURBOMIND_V01_BLOCK_TOKENS)
    run.itl_per_token = per_token_itl_client(row.text("notes"))
    if row.source.startswith(INFERENCEX_PREFIX):
        flags = launch_flags(engine, row.text("hardware_id"), row.text("quant"), row.text("model"),
                             row.positive("concurrency") or 0, tp=tp, dp=dp, disaggregated=run.disagg is not None)
        run.stream_tokens, run.recv_interval, run.adp_balance_timeout = flags
        if run.disagg is not None:
            run.itl_reason = INFERENCEX_DISAGG_ITL
    if "speculative_decoding" in row.text("flag").lower().split(";"):
        spec = read_speculation(row.text("backend") + " ; " + row.text("notes"))
        if spec.reason is not None:
            run.reason = spec.reason
            return run
        kwargs.update(spec.deploy_kwargs())  # the source's method, drafts and acceptance (else the method's defaults)
        run.tokens_per_pass = spec.tokens_per_pass
        if engine == "sglang" and spec.launch_printed and not re.search(r"--max-running-requests", row.text("notes")):
            # SGLang's ServerArgs._handle_speculative_decoding: max_running_requests = 48 for the whole
            # server unless the launch sets it, split over the attention-DP ranks (deploy multiplies by dp)
            kwargs["max_num_seqs"] = max(1, SGLANG_SPEC_MAX_RUNNING // max(1, dp))
    multi = re.search(r"--num-scheduler-steps[ =](\d+)", row.text("backend"))
    if multi:
        kwargs["scheduler_steps"] = int(multi.group(1))  # launch flags the source printed
    scenario = row.scenario
    batch = batch_cell(row)
    if batch == "max" and scenario in ("static-batch", ""):
        scenario = "offline"  # every request queued at once, the engine's memory choosing the batch
    prompt, gen = row.positive("prompt_tokens"), row.positive("gen_tokens")
    n = int(row.positive("num_requests") or 1000)
    lengths = _lengths(row, prompt, gen, preset.spec.tokenizer)
    if lengths is None:
        run.reason = "prompt/output lengths not stated and the dataset is not known"
        return run
    p_dist, o_dist = lengths
    if scenario == "offline":
        if isinstance(batch, int):
            kwargs["max_num_seqs"] = batch  # the batch limit the source ran with
        run.workload = Workload("offline", min(n, MAX_SIM_REQUESTS * run.replicas), p_dist, o_dist)
    elif scenario == "static-batch":
        # every prompt queued together; the engine's own memory rule decides how many run at once
        # (static_batch.STATIC_ENGINES: a static batch held until its longest request ends)
        b = batch if isinstance(batch, int) else 1
        run.batch = b
        run.static_batch = True
        kwargs["max_num_seqs"] = max(1, -(-b // run.replicas))
        if engine in STATIC_ENGINES:
            kwargs["static"] = True
        run.workload = Workload("offline", b, p_dist, o_dist)
    elif scenario == "online-rate":
        rate = row.positive("request_rate")
        if not rate:
            run.reason = "online-rate row without a request_rate"
            return run
        run.workload = Workload("poisson", min(n, MAX_SIM_REQUESTS * run.replicas), p_dist, o_dist, rate_per_s=rate)
    elif scenario == "online-concurrency":
        c = int(row.positive("concurrency") or 0)
        if c < 1:
            run.reason = "online-concurrency row without a concurrency"
            return run
        if not row.text("num_requests") and row.source.startswith(INFERENCEX_PREFIX):
            n = INFERENCEX_PROMPTS_PER_CLIENT * c  # InferenceX: --num-prompts $((CONC * 10))
        run.batch = c
        run.workload = Workload("closed", min(n, MAX_SIM_REQUESTS * run.replicas), p_dist, o_dist, concurrency=c)
    elif not scenario:
        run.reason = "no scenario: a single-stream row in a serving file (validate it from a file without serving columns)"
        return run
    else:
        run.reason = f"scenario {scenario!r} is not simulated (known: {', '.join(SCENARIOS)})"
        return run
    run.deploy_kwargs = kwargs
    return run


def _layout_kwargs(par: Parallelism, hw: Any) -> dict[str, Any]:
    """The `deploy` keywords of a parallel layout: TP and PP, and EP, attention DP and nodes when it has them."""
    tp, dp, ep = par.layout()
    kwargs: dict[str, Any] = {"tp": tp, "pp": par.pp}
    if ep > 1 or dp > 1 or par.nodes > 1:
        kwargs.update(ep=ep, dp=dp, nodes=par.nodes)
        if par.nodes > 1 and hw.id.startswith(NVLINK_RACKS):
            kwargs["inter_link"] = "nvl72"  # a GB200/GB300 rack: one NVLink domain over its trays
    return kwargs


def _lengths(
    row: Row, prompt: float | None, gen: float | None, tokenizer: str | None
) -> tuple[LengthDist, LengthDist] | None:
    if prompt and gen and row.source.startswith(INFERENCEX_PREFIX):
        lo = INFERENCEX_RANGE_RATIO  # InferenceX's client: each length uniform in [int(L * 0.8), L]
        return (LengthDist("uniform", max(1, int(prompt * lo)), int(prompt)),
                LengthDist("uniform", max(1, int(gen * lo)), int(gen)))
    if prompt and gen and "nominal_random_lengths" in row.text("flag").lower().split(";"):
        text = " ".join(row.text(k) for k in ("notes", "dataset", "backend", "table_heading"))
        return random_lengths(text, int(prompt), int(gen), row.positive("num_requests"))  # the client's draw
    if prompt and gen:
        return fixed(int(prompt)), fixed(int(gen))
    means = (SHAREGPT_MEANS.get((row.source, tokenizer)) or SHAREGPT_MEANS.get((row.source, None))
             or printed_means(row.text("notes"), row.positive("num_requests")))
    if "sharegpt" in row.text("dataset").lower() and means is not None:
        mean_in, mean_out = means
        shrink = math.exp(SIGMA_SHAREGPT**2 / 2.0)
        return (LengthDist("lognormal", mean_in / shrink, SIGMA_SHAREGPT, max_tokens=SHAREGPT_MAX_TOKENS),
                LengthDist("lognormal", mean_out / shrink, SIGMA_SHAREGPT, max_tokens=SHAREGPT_MAX_TOKENS))
    return None


def _planned(rows: list[Row]) -> Run:
    """`plan_run`, with a cell it cannot read (or a workload it refuses) as the run's reason, never raised."""
    try:
        return plan_run(rows)
    except TokometerError as exc:
        return Run(rows, reason=str(exc))
    except (ValueError, ArithmeticError) as exc:  # a number no column check caught: still the row's problem
        return Run(rows, reason=f"cannot read the row: {exc}")


def group_runs(rows: Iterable[Row]) -> list[Run]:
    """One `Run` per setup; an output the source printed twice counts once (`fitting/reprints.py`)."""
    groups: dict[tuple[str, ...], list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.run_key].append(r)
    runs = [_planned(drop_repeated_blocks(g)) for g in groups.values()]
    mark_reprinted_runs(runs)
    return runs
