"""`tokometer utilization`, `fit` and `sweep`: a measured run against the physics, what fits a
device, and every combination of models x hardware x quants x contexts x batches at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from tokometer.cli.options import (
    engine_options,
    hardware_options,
    json_option,
    model_options,
    offload_options,
    parallel_options,
    plot_option,
    workload_options,
)
from tokometer.domain.specs import BACKENDS
from tokometer.errors import InputError


@click.command()
@click.argument("model", required=False)
@click.option("--measured-decode", "measured_decode_tok_s", type=float, required=True, help="Measured decode speed, tok/s per stream (llama-bench tg, llama-server 'eval', steady-state tokens/s after the first).")
@click.option("--measured-prefill", "measured_prefill_tok_s", type=float, help="Measured prompt processing, tok/s, on a prompt of --prompt tokens.")
@model_options
@hardware_options
@engine_options
@workload_options
@parallel_options
@offload_options
@json_option
def utilization(model: str | None, as_json: bool, **options: Any) -> None:
    """How much of the hardware a measured run uses: MBU, MFU, share of the ceiling, and a verdict.

    \b
    MBU = bytes read per step x steps/s / datasheet bandwidth
    MFU = FLOPs per second / datasheet peak
    Above 100 % of the ceiling is a finding, not a success (a wrong spec, a cache hit, speculative
    decoding, mis-counted tokens); far below points at CPU offload or a CPU fallback.

    \b
        tokometer utilization llama-3.1-8b --hw rtx-4090 -q q4_k_m --measured-decode 45
    """
    from tokometer.api.predict import utilization as run_utilization
    from tokometer.report.estimate import render_utilization

    result = run_utilization(model, **options)
    click.echo(result.to_json() if as_json else render_utilization(result.report))


@click.command()
@hardware_options
@click.option("--context", "context_tokens", type=int, default=4096, show_default=True, help="Context each session must hold; speeds are at this depth.")
@click.option("--sessions", type=int, default=1, show_default=True, help="Concurrent sessions to hold at that context.")
@click.option("--min-speed", "min_speed_tok_s", type=float, help="Only setups whose estimate reaches this many tok/s per stream.")
@click.option("-e", "--engine", help="Engine for every row [default: the usual one per hardware and quant].")
@click.option("--backend", type=click.Choice(list(BACKENDS)), help="Software backend.")
@click.option("--kv-dtype", help="KV-cache dtype: fp16, fp8, q8_0, q4_0 [default: the engine's].")
@click.option("--model", "models", multiple=True, help="Only these models (repeat or comma-separate) [default: the catalog].")
@click.option("-q", "--quant", "quants", multiple=True, help="Quants to try [default: bf16, fp8 where supported, q8_0, q6_k, q5_k_m, q4_k_m, q3_k_m, q2_k].")
@click.option("--all", "include_all", is_flag=True, help="Every row (not only the first 20), and what does not fit, with the reason.")
@click.option("--best", is_flag=True, help="One row per model: its highest-precision quant that fits.")
@json_option
def fit(as_json: bool, models: Sequence[str], quants: Sequence[str], **options: Any) -> None:
    """What can I run: catalog models and quants that fit a device, how fast, with how much context.

    \b
        tokometer fit --hw rtx-4090 --context 8192 --min-speed 10
    """
    from tokometer.api.explore import fit as run_fit
    from tokometer.report.estimate import FIT_TOP_ROWS, render_fit

    hw = options.pop("hw")
    result = run_fit(hw, model=_split(models) or None, quant=_split(quants) or None, **options)
    limit = None if options.get("include_all") else FIT_TOP_ROWS
    click.echo(result.to_json() if as_json else render_fit(result.report, limit=limit))


@click.command()
@click.option("--model", "models", multiple=True, help="Models (repeat or comma-separate; `all`: the catalog) [default: llama-3.1-8b].")
@click.option("--hw", "hardware", multiple=True, help="Hardware ids (repeat or comma-separate; `all`: the catalog) [default: rtx-4090].")
@click.option("-q", "--quant", "quants", multiple=True, help="Quants (repeat or comma-separate; `all`: the fit ladder) [default: q4_k_m].")
@click.option("--context", "contexts", multiple=True, help="Context depths in tokens, e.g. 0,4096,32768 [default: 512].")
@click.option("--batch", "batches", multiple=True, help="Batch sizes, e.g. 1,8,64 [default: 1].")
@click.option("-e", "--engine", help="Engine for every row [default: the usual one per hardware and quant].")
@click.option("--backend", type=click.Choice(list(BACKENDS)), help="Software backend.")
@click.option("--kv-dtype", help="KV-cache dtype: fp16, fp8, q8_0, q4_0 [default: the engine's].")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True, help="Output format.")
@click.option("--output", "output_path", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
@plot_option
@json_option
def sweep(
    models: Sequence[str],
    hardware: Sequence[str],
    quants: Sequence[str],
    contexts: Sequence[str],
    batches: Sequence[str],
    fmt: str,
    output_path: str | None,
    plot_path: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Decode over models x hardware x quants x contexts x batches, vectorised (numpy).

    Every combination is one cell of an array, so millions of setups take a fraction of a second
    (benchmarks/sweep.py); writing them out takes longer than computing them.

    \b
        tokometer sweep --model llama-3.1-8b,qwen3-30b-a3b --hw rtx-4090,h100-sxm \\
            -q q4_k_m,q8_0 --context 0,32768 --batch 1,16 --format csv
    """
    from tokometer.api.explore import sweep as run_sweep
    from tokometer.report.estimate import render_sweep_csv, render_sweep_table

    swept = run_sweep(
        model=_split(models) or None,
        hw=_split(hardware) or None,
        quant=_split(quants) or None,
        context=_ints("--context", contexts) or (512,),
        batch=_ints("--batch", batches) or (1,),
        **options,
    )
    result = swept.result
    if plot_path:
        from tokometer.report.plots import plot_sweep

        written = plot_sweep(result, plot_path)
        click.echo(f"plot written to {written.resolve()}", err=True)
    if as_json:
        fmt = "json"
    text = {"json": lambda: swept.to_json(), "csv": lambda: render_sweep_csv(result)}.get(
        fmt, lambda: render_sweep_table(result)
    )()
    if output_path:
        with open(output_path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
        click.echo(f"{result.size:,} setups written to {output_path}", err=True)
    else:
        click.echo(text)


def _split(values: Sequence[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _ints(name: str, values: Sequence[str]) -> list[int]:
    out = []
    for v in _split(values):
        try:
            number = int(v)
        except ValueError:
            raise InputError(f"{name} takes whole numbers, e.g. 0,4096,32768; got {v!r}") from None
        out.append(number)
    return out
