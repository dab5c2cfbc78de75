"""`tokometer estimate`: the ceiling and the realistic estimate, side by side, with the why."""

from __future__ import annotations

from typing import Any

import click

from tokometer.cli.options import (
    engine_options,
    hardware_options,
    json_option,
    lever_options,
    model_options,
    plot_option,
    workload_options,
)


@click.command()
@click.argument("model", required=False)
@model_options
@hardware_options
@engine_options
@workload_options
@lever_options
@plot_option
@json_option
def estimate(model: str | None, as_json: bool, plot_path: str | None, **options: Any) -> None:
    """Predict decode speed (ceiling and estimate), prefill, TTFT, latency and memory.

    MODEL is a catalog name (`tokometer models list`), a config.json, a model folder, a
    .gguf or .safetensors file, or a Hugging Face Hub id. Without a model, give bare numbers:

        tokometer estimate --params 70 --bits 16 --bandwidth 3350

    With no arguments at all it estimates Llama 3.1 8B on an RTX 4090.

    Default precision, one rule with or without a model name: a model file counts its own bytes;
    otherwise the hardware picks the engine (llama.cpp on consumer GPUs, Apple and CPUs, vLLM on
    datacenter GPUs) and the engine the format: Q4_K_M under llama.cpp-family engines, the model's
    published dtype (BF16) under the others. --quant, --bits or --weights-gb override it.

    \b
    The levers (all off by default; each has its own section of --json):
      speculative decoding   --draft llama-3.2-1b --acceptance 0.8 --draft-tokens 4
      tensor/pipeline        --tp 2 --pp 1 --link nvlink|pcie4x16|64
      CPU offload            --gpu-layers 26|0.8 --cpu-hw ddr5-dual-channel --offload-mode cpu|stream
    The JSON always has `batching` (per-stream and aggregate vs batch, the ridge point) and
    `context` (decode speed as the KV cache fills) curves.
    """
    from tokometer.report.estimate import render_estimate
    from tokometer.report.json import estimate_json
    from tokometer.report.text import to_json
    from tokometer.usecases.estimate import estimate as run_estimate

    result = run_estimate(model, **options)
    if plot_path:
        from tokometer.report.plots import plot_estimate

        written = plot_estimate(result, plot_path)
        click.echo(f"plot written to {written.resolve()}", err=True)
    click.echo(to_json(estimate_json(result)) if as_json else render_estimate(result))
