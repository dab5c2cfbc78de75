"""Options shared by the commands that predict: the model, the hardware, the engine, the workload."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

F = Callable[..., Any]


def model_options(f: F) -> F:
    for decorator in reversed(
        [
            click.option("--params", "params_b", type=float, help="Bare model: total parameters, in billions."),
            click.option("--active-params", "active_params_b", type=float, help="Bare MoE model: active parameters per token, in billions."),
            click.option("--layers", "n_layers", type=int, help="Bare model: number of layers (for per-layer overheads)."),
            click.option("--bits", type=float, help="Bits per weight, scales included (overrides --quant)."),
            click.option("--weights-gb", type=float, help="Size of the weights in GB (e.g. the file size); rescales the bytes."),
            click.option("-q", "--quant", help="Weight format: fp16, bf16, fp8, q4_k_m, q8_0, nvfp4, awq... (`tokometer quants list`)."),
        ]
    ):
        f = decorator(f)
    return f


def hardware_options(f: F) -> F:
    for decorator in reversed(
        [
            click.option("--hw", "hw", help="Hardware id or name (`tokometer hardware list`), e.g. rtx-4090, h100-sxm, m2-ultra-76c."),
            click.option("--bandwidth", "bandwidth_gb_per_s", type=float, help="Memory bandwidth in GB/s (custom device, or overrides --hw)."),
            click.option("--memory-gb", type=float, help="Device memory in GB (custom device, or overrides --hw)."),
            click.option("--tflops", type=float, help="Dense fp16 TFLOPS (custom device, or overrides --hw)."),
        ]
    ):
        f = decorator(f)
    return f


def engine_options(f: F) -> F:
    for decorator in reversed(
        [
            click.option("-e", "--engine", help="Inference engine: llama.cpp, ollama, vllm, sglang, tensorrt-llm, mlx, exllamav2, mlc-llm, gpt-fast, transformers."),
            click.option("--backend", type=click.Choice(["cuda", "rocm", "metal", "vulkan", "sycl", "cpu"]), help="Software backend (default: the hardware's usual one)."),
            click.option("--kv-dtype", help="KV-cache dtype: fp16, bf16, fp8, q8_0, q4_0 (default: the engine's)."),
        ]
    ):
        f = decorator(f)
    return f


def workload_options(f: F) -> F:
    for decorator in reversed(
        [
            click.option("--prompt", "prompt_tokens", type=int, default=512, show_default=True, help="Prompt length in tokens (prefill, TTFT)."),
            click.option("--output", "output_tokens", type=int, default=256, show_default=True, help="Tokens generated (end-to-end latency)."),
            click.option("--context", "context_tokens", type=int, help="Depth (tokens already in the KV cache) at which decode speed is reported [default: the prompt]."),
            click.option("--batch", type=int, default=1, show_default=True, help="Concurrent streams decoded together."),
            click.option("--sessions", type=int, help="Concurrent sessions to hold in memory [default: --batch]."),
        ]
    ):
        f = decorator(f)
    return f


json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def _apply(f: F, decorators: list[Callable[[F], F]]) -> F:
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def speculative_options(f: F) -> F:
    """Speculative decoding (PHYSICS.md section 7). JSON: `speculative.*`."""
    return _apply(
        f,
        [
            click.option("--draft", help="Speculative decoding: draft model with MODEL's tokenizer, e.g. llama-3.2-1b. JSON: speculative.*"),
            click.option("--draft-quant", help="Draft weight format [default: MODEL's format]."),
            click.option("--acceptance", type=float, help="Share of drafted tokens the target accepts, in [0, 1) [default: 0.7, assumed]."),
            click.option("--draft-tokens", type=int, help="Tokens drafted per target pass, k [default: 4]."),
        ],
    )


def parallel_options(f: F) -> F:
    """Tensor and pipeline parallelism over identical devices. JSON: `parallel.*`."""
    return _apply(
        f,
        [
            click.option("--tp", type=int, default=1, show_default=True, help="Tensor parallel over N devices: weights and KV split, two all-reduces per layer. JSON: parallel.*"),
            click.option("--pp", type=int, default=1, show_default=True, help="Pipeline parallel over N stages: adds memory, not single-stream speed."),
            click.option("--link", help="Link between devices (or to the host for --offload-mode stream): nvlink, pcie3, pcie4, pcie5, optionally xLANES (pcie4x8), or a bandwidth in GB/s [default: NVLink if the device has it, else its PCIe]."),
        ],
    )


def offload_options(f: F) -> F:
    """CPU offload of some layers. JSON: `offload.*`."""
    return _apply(
        f,
        [
            click.option("--gpu-layers", help="CPU offload: layers on the GPU, a count (26) or a share (0.8); the others run from system RAM. JSON: offload.*"),
            click.option("--cpu-hw", help="CPU memory system for the offloaded layers (`tokometer hardware list --vendor generic`) [default: ddr5-dual-channel]."),
            click.option("--offload-mode", type=click.Choice(["cpu", "stream"]), help="cpu: offloaded layers computed on the CPU (llama.cpp); stream: their weights cross PCIe every step [default: cpu]."),
        ],
    )


def lever_options(f: F) -> F:
    """Speculative decoding, parallelism and CPU offload (PHYSICS.md section 7); all off by default."""
    return speculative_options(parallel_options(offload_options(f)))


plot_option = click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write a figure (.png, .svg or .pdf): decode vs context, vs batch, a roofline, the offload curve.",
)
