"""`EstimateRequest`: the one definition of what a prediction takes, with defaults and checks.

Every input of `estimate()` is a field here, and its metadata says how the entry points show it:
the CLI builds its options from `flag`/`group`/`help` (`cli/options.py`), the web form takes the
field names and their `kind` (`web/inputs.py`), and validation maps a measured row onto the same
fields. Checks that need no catalog run in `__post_init__`; they raise `InputError` on the field.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Literal

from tokometer.costmodel.layout import OFFLOAD_MODES, OffloadMode
from tokometer.domain.specs import BACKENDS, Efficiency, HardwareSpec, ModelSpec
from tokometer.errors import InputError, require_non_negative, require_positive

# how a field is read from text (a form or a query string): a catalog name, free text, a number,
# a whole number, a layer count or share, or a yes/no flag
FieldKind = Literal["name", "text", "float", "int", "layers", "flag", "object"]
Group = Literal["model", "hardware", "engine", "workload", "speculative", "parallel", "offload"]

# the largest bare model taken, in billions of parameters: 50x the largest published models (about
# 2,000 B). Beyond it a count is a typo or a fuzzer's draw (`--params 1e30` once printed 30-digit
# figures and, before the offload curve was bounded, hung the CLI at 9 GB)
MAX_PARAMS_B = 100_000.0


def _input(
    default: Any,
    kind: FieldKind,
    group: Group | None = None,
    flag: str | None = None,
    help: str = "",
    *,
    short: str | None = None,
    choices: tuple[str, ...] | None = None,
    show_default: bool = False,
) -> Any:
    """A request field with how the CLI and the web present it (`group` None: not a CLI option)."""
    meta = {"kind": kind, "group": group, "flag": flag, "help": help, "short": short, "choices": choices,
            "show_default": show_default}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class EstimateRequest:
    """One setup to predict: a model (catalog name, file, Hub id or bare numbers), hardware, engine,
    workload and the levers (speculative decoding, TP/PP, CPU offload), all off by default."""

    model: str | ModelSpec | None = _input(None, "name")
    hw: str | HardwareSpec | None = _input(
        None, "name", "hardware", "--hw",
        "Hardware id or name (`tokometer hardware list`), e.g. rtx-4090, h100-sxm, m2-ultra-76c.",
    )
    params_b: float | None = _input(None, "float", "model", "--params", "Bare model: total parameters, in billions.")
    active_params_b: float | None = _input(
        None, "float", "model", "--active-params", "Bare MoE model: active parameters per token, in billions."
    )
    n_layers: int | None = _input(None, "int", "model", "--layers", "Bare model: number of layers (for per-layer overheads).")
    bits: float | None = _input(None, "float", "model", "--bits", "Bits per weight, scales included (overrides --quant).")
    weights_gb: float | None = _input(
        None, "float", "model", "--weights-gb", "Size of the weights in GB (e.g. the file size); rescales the bytes."
    )
    quant: str | None = _input(
        None, "name", "model", "--quant",
        "Weight format, as the file types people download: q4_k_m, q2_k (the ~3.2 bpw file), q8_0, bf16, fp8, awq... "
        "(`tokometer quants list`) [default: Q4_K_M under llama.cpp-family engines, the model's published dtype "
        "(BF16) under the others; the engine defaults to the hardware's usual one].",
        short="-q",
    )
    bandwidth_gb_per_s: float | None = _input(
        None, "float", "hardware", "--bandwidth", "Memory bandwidth in GB/s (custom device, or overrides --hw)."
    )
    memory_gb: float | None = _input(None, "float", "hardware", "--memory-gb", "Device memory in GB (custom device, or overrides --hw).")
    tflops: float | None = _input(None, "float", "hardware", "--tflops", "Dense fp16 TFLOPS (custom device, or overrides --hw; fp8/fp4 peaks keep their ratio to it).")
    engine: str | None = _input(
        None, "name", "engine", "--engine",
        "Inference engine: llama.cpp, ollama, vllm, sglang, tensorrt-llm, mlx, exllamav2, mlc-llm, gpt-fast, transformers.",
        short="-e",
    )
    backend: str | None = _input(
        None, "name", "engine", "--backend", "Software backend (default: the hardware's usual one).", choices=BACKENDS
    )
    kv_dtype: str | None = _input(
        None, "name", "engine", "--kv-dtype", "KV-cache dtype: fp16, bf16, fp8, q8_0, q4_0 (default: the engine's)."
    )
    prompt_tokens: int = _input(
        512, "int", "workload", "--prompt", "Prompt length in tokens (prefill, TTFT).", show_default=True
    )
    output_tokens: int = _input(256, "int", "workload", "--output", "Tokens generated (end-to-end latency).", show_default=True)
    context_tokens: int | None = _input(
        None, "int", "workload", "--context",
        "Depth (tokens already in the KV cache) at which decode speed is reported [default: the prompt].",
    )
    batch: int = _input(1, "int", "workload", "--batch", "Concurrent streams decoded together.", show_default=True)
    sessions: int | None = _input(None, "int", "workload", "--sessions", "Concurrent sessions to hold in memory [default: --batch].")
    efficiency: Efficiency | None = _input(None, "object")
    draft: str | ModelSpec | None = _input(
        None, "name", "speculative", "--draft",
        "Speculative decoding: draft model with MODEL's tokenizer, e.g. llama-3.2-1b. JSON: speculative.*",
    )
    draft_quant: str | None = _input(None, "name", "speculative", "--draft-quant", "Draft weight format [default: MODEL's format].")
    acceptance: float | None = _input(
        None, "float", "speculative", "--acceptance",
        "Share of drafted tokens the target accepts, in [0, 1) [default: 0.7, assumed].",
    )
    draft_tokens: int | None = _input(None, "int", "speculative", "--draft-tokens", "Tokens drafted per target pass, k [default: 4].")
    tp: int = _input(
        1, "int", "parallel", "--tp",
        "Tensor parallel over N devices: weights and KV split, two all-reduces per layer. JSON: parallel.*",
        show_default=True,
    )
    pp: int = _input(
        1, "int", "parallel", "--pp", "Pipeline parallel over N stages: adds memory, not single-stream speed.",
        show_default=True,
    )
    link: str | None = _input(
        None, "text", "parallel", "--link",
        "Link between devices (or to the host for --offload-mode stream): nvlink, pcie3, pcie4, pcie5, optionally "
        "xLANES (pcie4x8), or a bandwidth in GB/s [default: NVLink if the device has it, else its PCIe].",
    )
    ep: int = _input(
        1, "int", "parallel", "--ep",
        "MoE expert parallel: the routed experts spread over N of the tp x dp GPUs (1: each expert split "
        "tensor-parallel); tokens cross an all-to-all dispatch and combine per layer.",
        show_default=True,
    )
    dp: int = _input(
        1, "int", "parallel", "--dp",
        "Attention data parallel: N ranks of --tp GPUs each, attention weights replicated, each rank its own "
        "batch and KV; the MoE layers span all tp x dp GPUs (vLLM's convention).",
        show_default=True,
    )
    nodes: int = _input(
        1, "int", "parallel", "--nodes",
        "Nodes the tp x dp x pp GPUs spread over (evenly); collectives that span nodes cross --inter-link.",
        show_default=True,
    )
    inter_link: str | None = _input(
        None, "text", "parallel", "--inter-link",
        "Link between nodes, per GPU: ib-ndr (400 Gb/s), ib-xdr (800 Gb/s), ib-hdr, roce-400, roce-200, an NVLink "
        "domain nvl72/nvl36, or GB/s [default: ib-ndr when --nodes > 1].",
    )
    gpu_layers: int | float | str | None = _input(
        None, "layers", "offload", "--gpu-layers",
        "CPU offload: layers on the GPU, a count (26) or a share (0.8); the others run from system RAM. JSON: offload.*",
    )
    cpu_hw: str | HardwareSpec | None = _input(
        None, "name", "offload", "--cpu-hw",
        "CPU memory system for the offloaded layers (`tokometer hardware list --vendor generic`) [default: ddr5-dual-channel].",
    )
    offload_mode: OffloadMode | None = _input(
        None, "text", "offload", "--offload-mode",
        "cpu: offloaded layers computed on the CPU (llama.cpp); stream: their weights cross PCIe every step [default: cpu].",
        choices=OFFLOAD_MODES,
    )
    offload_experts: int | str | None = _input(
        None, "layers", "offload", "--offload-experts",
        "MoE: the routed experts of N layers (or all) stay in system RAM and run on the CPU; attention, shared "
        "experts and the KV cache stay on the GPU (llama.cpp --n-cpu-moe N, -ot exps=CPU). JSON: offload.*",
    )
    advise: bool = _input(True, "flag")

    def __post_init__(self) -> None:
        """The checks that need no catalog: signs, whole numbers, closed sets."""
        require_non_negative("prompt_tokens", self.prompt_tokens)
        require_positive("output_tokens", self.output_tokens)
        require_non_negative("context_tokens", self.context_tokens)
        require_positive("batch", self.batch)
        require_positive("sessions", self.sessions)
        require_positive("params_b", self.params_b)
        require_positive("active_params_b", self.active_params_b)
        require_positive("weights_gb", self.weights_gb)
        require_positive("n_layers", self.n_layers)
        require_positive("bandwidth_gb_per_s", self.bandwidth_gb_per_s)
        require_positive("memory_gb", self.memory_gb)
        require_positive("tflops", self.tflops)
        require_positive("bits", self.bits)
        for name in ("params_b", "active_params_b"):
            count = getattr(self, name)
            if count is not None and count > MAX_PARAMS_B:
                raise InputError(
                    f"{{{name}}} = {count:g} billion parameters is implausible: at most {MAX_PARAMS_B:,.0f} "
                    "(100 trillion; the largest published models have about 2,000 billion)",
                    field=name,
                )
        if self.bits is not None and self.bits > 64:
            raise InputError(f"{{bits}} must be at most 64, got {self.bits:g}", field="bits")
        if self.backend is not None and self.backend not in BACKENDS:
            raise InputError(f"{{backend}} must be one of {', '.join(BACKENDS)}, got {self.backend!r}", field="backend")
        for name in ("tp", "pp", "ep", "dp", "nodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(
                    f"{{{name}}} must be a whole number of devices, 1 or more, got {value!r}", field=name
                )
        if self.offload_mode is not None and self.offload_mode not in OFFLOAD_MODES:
            raise InputError(
                f"{{offload_mode}} must be one of {', '.join(OFFLOAD_MODES)}, got {self.offload_mode!r}",
                field="offload_mode",
            )
        if self.model and self.params_b is not None and not isinstance(self.model, ModelSpec):
            raise InputError("give either a model name or {params_b}, not both", field="params_b")
        if self.draft is None:
            for name in ("acceptance", "draft_tokens", "draft_quant"):
                if getattr(self, name) is not None:
                    raise InputError(
                        "{acceptance}, {draft_tokens} and {draft_quant} need {draft} MODEL", field="draft"
                    )

    @property
    def depth_tokens(self) -> float:
        """Where decode speed is reported: `context_tokens`, else right after the prompt."""
        return float(self.prompt_tokens if self.context_tokens is None else self.context_tokens)

    @property
    def mean_decode_depth_tokens(self) -> float:
        """The cache depth halfway through generating `output_tokens` after the prompt."""
        return mean_decode_depth(self.prompt_tokens, self.output_tokens)


def mean_decode_depth(prompt_tokens: float, output_tokens: float) -> float:
    """Mean KV depth over a generation of N tokens after a prompt of P: `P + N / 2` tokens.

    A step's time grows linearly with the depth it reads, so the mean step is the one halfway through
    the generation (docs/PHYSICS.md, section 5). The one rule for TPOT, validation rows and the bench's
    predictions.
    """
    return float(prompt_tokens) + output_tokens / 2.0


def request_fields() -> tuple[Any, ...]:
    """The dataclass fields of `EstimateRequest`, in order, each with its presentation metadata."""
    return fields(EstimateRequest)


def request_flags() -> dict[str, str]:
    """Field name -> its command-line flag (`params_b` -> `--params`), to word errors for CLI users."""
    return {f.name: f.metadata["flag"] for f in fields(EstimateRequest) if f.metadata.get("flag")}


def request_schema() -> list[dict[str, Any]]:
    """The request's fields as a form builds them: name, kind, group, default, flag, choices, help.

    `GET /api/schema` serves it, so a page can check or build its inputs from the one definition.
    """
    rows = []
    for f in fields(EstimateRequest):
        meta = f.metadata
        if meta["kind"] == "object":
            continue  # not a form input (an `Efficiency` object)
        rows.append(
            {
                "name": f.name,
                "kind": meta["kind"],
                "group": meta["group"],
                "default": None if f.default is MISSING else f.default,
                "flag": meta["flag"],
                "choices": list(meta["choices"]) if meta["choices"] else None,
                "help": meta["help"],
            }
        )
    return rows
