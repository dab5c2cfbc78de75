"""`tokometer plan`: the cheapest hardware x format x TP x replicas (colocated, or split into prefill and
decode pools) meeting p99 TTFT/TPOT objectives."""

from __future__ import annotations

from typing import Any

import click

from tokometer.cli.options import json_option
from tokometer.errors import InputError


@click.command()
@click.argument("model")
@click.option("--rate", type=float, help="Requests per second to serve (required unless --frontier).")
@click.option("--prompt", type=int, default=1000, show_default=True, help="Prompt tokens per request.")
@click.option("--output", type=int, default=200, show_default=True, help="Output tokens per request.")
@click.option("--slo-ttft-p99", type=float, help="p99 time-to-first-token objective, ms (required unless --frontier).")
@click.option("--slo-tpot-p99", type=float, help="p99 time-per-output-token objective, ms (required unless --frontier).")
@click.option("--hw", "hw_list", help="Hardware to consider, comma-separated [default: the priced datacenter GPUs].")
@click.option("-q", "--quant", "quant_list", help="Weight formats, comma-separated [default: bf16,fp8,awq-int4].")
@click.option("-e", "--engine", default="vllm", show_default=True, help="Scheduler (vllm, sglang, tensorrt-llm, lmdeploy).")
@click.option("--price", "prices", multiple=True, help="Override a price: HW=USD per device-hour (repeatable).")
@click.option("--disagg/--no-disagg", "disagg", default=True, show_default=True,
              help="Also consider disaggregated prefill/decode pools (P:D replicas, the KV over NVLink or PCIe).")
@click.option("--top", type=int, default=5, show_default=True, help="How many configurations to print.")
@click.option("--frontier", is_flag=True, help="Instead of a plan: the Pareto set of tokens/s per GPU against tokens/s per user over the hardware, formats, layouts and concurrencies.")
@click.option("--concurrencies", help="--frontier: users to simulate [default: 1,4,16,64,256,1024].")
@click.option("--plot", "plot_file", help="--frontier: write the frontier figure (.png/.svg/.pdf).")
@click.option("--emit", "emit", help="Print the launch commands of each row for an engine: vllm, sglang, tensorrt-llm or llama-cpp (flags pinned per engine version).")
@click.option("--spec-method", help="Speculative decoding in every candidate: draft, mtp, eagle3 or ngram.")
@click.option("--spec-tokens", type=int, help="Tokens drafted per pass [default: per method].")
@click.option("--spec-acceptance", type=float, help="Share of drafted tokens accepted [default: per method, sourced].")
@click.option("--draft-model", help="The draft model of --spec-method draft.")
@click.option("--spec", "spec_mode", type=click.Choice(["on", "auto"]), default="on", show_default=True,
              help="on: every candidate speculates; auto: each layout with and without, the cheaper kept.")
@click.option("--seed", type=int, default=0, show_default=True)
@json_option
def plan(model: str, rate: float | None, prompt: int, output: int, slo_ttft_p99: float | None, slo_tpot_p99: float | None,
         hw_list: str | None, quant_list: str | None, engine: str, prices: tuple[str, ...], disagg: bool, top: int,
         frontier: bool, concurrencies: str | None, plot_file: str | None, emit: str | None, spec_method: str | None,
         spec_tokens: int | None, spec_acceptance: float | None, draft_model: str | None, spec_mode: str, seed: int,
         as_json: bool) -> None:
    """Find the cheapest deployments of MODEL that serve --rate within the p99 objectives (simulated).

    Replicas are colocated (each runs prefill and decode), or with --disagg (the default) split into a
    prefill pool and a decode pool, shown as P:D (e.g. 2P:6D); --no-disagg leaves the splits out."""
    from tokometer.api.serving import names, plan_space
    from tokometer.api.serving import plan as make_plan
    from tokometer.report.text import table

    if frontier:
        if spec_mode != "on":
            raise InputError("--spec auto goes with a plan: --frontier already runs each layout with and without --spec-method")
        hardware, quants = plan_space()
        spec = {"spec_method": spec_method, "spec_tokens": spec_tokens, "spec_acceptance": spec_acceptance, "draft_model": draft_model}
        _frontier(model, names(hw_list) or hardware, names(quant_list) or quants, engine, prompt, output,
                  concurrencies, plot_file, seed, as_json, spec)
        return
    if concurrencies is not None or plot_file is not None:
        raise InputError("--concurrencies and --plot go with --frontier")
    missing = [n for n, v in (("--rate", rate), ("--slo-ttft-p99", slo_ttft_p99), ("--slo-tpot-p99", slo_tpot_p99)) if v is None]
    if missing:
        raise InputError(f"plan needs {', '.join(missing)} (or --frontier)")
    assert rate is not None and slo_ttft_p99 is not None and slo_tpot_p99 is not None
    planned = make_plan(
        model, rate=rate, prompt=prompt, output=output, slo_ttft_p99=slo_ttft_p99, slo_tpot_p99=slo_tpot_p99,
        hw=hw_list, quant=quant_list, engine=engine, price=prices, seed=seed, top=top, disagg=disagg, progress=not as_json,
        emit=emit, spec_method=spec_method, spec_tokens=spec_tokens, spec_acceptance=spec_acceptance, draft_model=draft_model,
        spec=spec_mode,
    )
    result, dicts, launches = planned.plan, planned.configs(), planned.launches()
    if as_json:
        click.echo(planned.to_json())
        return
    rows = [
        [d["hardware"], d["quant"], d["layout"], d["disagg"] or str(d["replicas"]), str(d["gpus"]), f"${d['usd_per_hour']:,.2f}",
         f"${d['usd_per_million_output_tokens']:,.2f}", f"{(d['ttft_p99_s'] or 0) * 1e3:,.0f}",
         f"{(d['tpot_p99_s'] or 0) * 1e3:,.1f}", d["binding"]]
        for d in dicts
    ]
    click.echo(f"{rate:g} req/s of {prompt}-in/{output}-out, p99 TTFT <= {slo_ttft_p99:g} ms, p99 TPOT <= {slo_tpot_p99:g} ms")
    click.echo(table(rows, ["hardware", "quant", "layout", "replicas", "GPUs", "$/hour", "$/M out tok", "TTFT p99 ms", "TPOT p99 ms", "binding"]))
    for i, lau in enumerate(launches, start=1):
        click.echo(f"\nlaunch, row {i}:\n{lau.render()}")
    click.echo(f"considered {result.considered} (hardware x format x TP, and DP x EP for MoE" + (", colocated and P:D split" if disagg else "") + "); pruned: "
               + ", ".join(f"{n} {why}" for why, n in sorted(result.pruned.items(), key=lambda kv: -kv[1])))


PLAN_FRONTIER_CONCURRENCIES = "1,4,16,64,256,1024"


def _frontier(model: str, hardware: tuple[str, ...], quants: tuple[str, ...], engine: str, prompt: int, output: int,
              concurrencies: str | None, plot_file: str | None, seed: int, as_json: bool, spec: dict[str, Any]) -> None:
    """`plan --frontier`: every hardware x format x layout that fits (with and without `--spec-method` when
    given), closed loops at each concurrency, the Pareto set."""
    from tokometer.api.frontier import frontier
    from tokometer.report.serving import plot_frontier, render_frontier

    front = frontier(model, hardware, quant=quants, engine=engine, prompt=prompt, output=output,
                     concurrencies=concurrencies or PLAN_FRONTIER_CONCURRENCIES, seed=seed, **spec)
    if plot_file:
        plot_frontier(plot_file, front.frontier)
    if as_json:
        click.echo(front.to_json())
        return
    click.echo(f"{prompt}-in/{output}-out, closed loops; tokens/s per user = 1 / mean TPOT")
    click.echo(render_frontier(front.frontier))
