"""`tokometer estimate`: the ceiling and the realistic estimate, side by side, with the why."""

from __future__ import annotations

from typing import Any

import click

from tokometer.cli.options import engine_options, hardware_options, json_option, model_options, workload_options


@click.command()
@click.argument("model", required=False)
@model_options
@hardware_options
@engine_options
@workload_options
@json_option
def estimate(model: str | None, as_json: bool, **options: Any) -> None:
    """Predict decode speed (ceiling and estimate), prefill, TTFT, latency and memory.

    MODEL is a catalog name (`tokometer models list`), a config.json, a model folder, a
    .gguf or .safetensors file, or a Hugging Face Hub id. Without a model, give bare numbers:

        tokometer estimate --params 70 --bits 16 --bandwidth 3350

    With no arguments at all it estimates Llama 3.1 8B Q4_K_M on an RTX 4090.
    """
    from tokometer.api import estimate as run_estimate
    from tokometer.report.estimate import render_estimate
    from tokometer.report.text import to_json

    result = run_estimate(model, **options)
    click.echo(to_json(result.to_dict()) if as_json else render_estimate(result))
