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
