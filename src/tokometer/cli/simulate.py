"""`tokometer simulate` (a served workload, step by step), `tokometer plan` (cheapest setup meeting
SLOs). Entry points only: the work is in `usecases/`."""

from __future__ import annotations

from typing import Any

import click

from tokometer.cli.options import json_option
from tokometer.errors import InputError


@click.command()
@click.argument("model")
@click.option("--hw", required=True, help="Hardware id or name (`tokometer hardware list`).")
@click.option("-q", "--quant", help="Weight format (fp16, bf16, fp8, awq...).")
@click.option("-e", "--engine", default="vllm", show_default=True, help="Scheduler: vllm, sglang, tensorrt-llm, lmdeploy, llama-cpp, static.")
@click.option("--kv-dtype", help="KV-cache dtype (default: the engine's).")
@click.option("--tp", type=int, default=1, show_default=True, help="Tensor-parallel devices per replica.")
@click.option("--pp", type=int, default=1, show_default=True, help="Pipeline stages per replica.")
@click.option("--ep", type=int, default=1, show_default=True, help="MoE expert parallel over N of the tp x dp GPUs (all-to-all dispatch and combine per layer).")
@click.option("--dp", type=int, default=1, show_default=True, help="Attention data-parallel ranks of --tp GPUs each (own batch and KV; MoE over tp x dp GPUs).")
@click.option("--nodes", type=int, default=1, show_default=True, help="Nodes the replica's GPUs spread over; collectives across nodes use --inter-link.")
@click.option("--inter-link", help="Link between nodes per GPU: ib-ndr, ib-xdr, ib-hdr, roce-400, roce-200, nvl72, nvl36 or GB/s [default: ib-ndr].")
@click.option("--overlap", is_flag=True, help="Two-batch overlap: the expert all-to-all hides under compute (SGLang --enable-two-batch-overlap, vLLM --enable-dbo).")
@click.option("--ep-imbalance", type=float, default=1.0, show_default=True, help="Busiest EP rank's tokens over the mean (1: balanced, as EPLB aims for).")
@click.option("--replicas", type=int, default=1, show_default=True, help="Engine replicas behind the router.")
@click.option("--disagg", help="P:D disaggregated prefill and decode pools (replicas each); the prompt's KV crosses --kv-link.")
@click.option("--kv-link", help="Link between the pools: nvlink, pcie4, pcie5x8... or GB/s (default: NVLink if the device has it, else PCIe).")
@click.option("--router", type=click.Choice(["round-robin", "least-outstanding"]), default="round-robin", show_default=True)
@click.option("--rate", help="Requests per second (Poisson); a list like 1,2,4,8 draws the latency-throughput curve.")
@click.option("--sweep-rate", is_flag=True, help="Sweep rates from 10 % to 120 % of saturation and find the knee.")
@click.option("--burstiness", type=float, default=1.0, show_default=True, help="Gamma arrivals: 1 is Poisson, below 1 burstier.")
@click.option("--constant-rate", is_flag=True, help="Evenly spaced arrivals instead of Poisson.")
@click.option("--concurrency", type=int, help="Closed loop: N users, each sends again when answered.")
@click.option("--think-s", type=float, default=0.0, show_default=True, help="Closed loop, and between --turns: seconds a user waits before the next request.")
@click.option("--offline", type=int, help="N requests all at t = 0 (max throughput).")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), help="Replay a JSONL/CSV trace (arrival time, prompt, output; Azure LLM trace columns work).")
@click.option("--prompt", default="1000", show_default=True, help="Prompt tokens: N or a distribution (uniform:LO:HI, normal:MEAN:SD, lognormal:MEDIAN:SIGMA, file:PATH).")
@click.option("--output", default="200", show_default=True, help="Output tokens: N or a distribution, as --prompt.")
@click.option("--lengths", help="PROMPT_DIST,OUTPUT_DIST in one option (overrides --prompt/--output).")
@click.option("-n", "--num-requests", type=int, default=1000, show_default=True, help="Requests to simulate (rate and concurrency runs).")
@click.option("--slo-ttft", type=float, help="TTFT objective in ms (goodput).")
@click.option("--slo-tpot", type=float, help="TPOT objective in ms (goodput).")
@click.option("--max-num-seqs", type=int, help="Scheduler: sequences running at once.")
@click.option("--max-num-batched-tokens", type=int, help="Scheduler: tokens per engine step.")
@click.option("--memory-fraction", type=float, help="Scheduler: share of memory for weights+KV (or of free memory, per engine).")
@click.option("--prefix-cache-hit", type=float, help="A fixed share of each prompt served from the prefix cache (0-0.99); wins over the content-based cache.")
@click.option("--system-prompt", type=int, help="Prefix caching: a shared system prompt of TOKENS that requests start with (their own text is --prompt).")
@click.option("--system-prompt-share", type=float, help="Share of requests (conversations) that start with a system prompt [default: 1 with --system-prompt].")
@click.option("--system-prompts", type=int, default=1, show_default=True, help="Distinct shared system prompts, each as likely.")
@click.option("--turns", type=int, default=1, show_default=True, help="Requests per conversation: each turn's prompt is the history plus new --prompt text, sent --think-s after the answer.")
@click.option("--scheduler-steps", type=int, help="Scheduler: decode steps per scheduling round (vLLM --num-scheduler-steps).")
@click.option("--spec-method", type=click.Choice(["draft", "mtp", "eagle3", "ngram"]),
              help="Speculative decoding: a draft model, the model's MTP head, an EAGLE-3 head or n-gram prompt lookup.")
@click.option("--spec-tokens", type=int, help="Speculative decoding: tokens drafted per step [default: per method].")
@click.option("--spec-acceptance", type=float, help="Speculative decoding: chance each drafted token is kept, 0-1 [default: published per method].")
@click.option("--draft-model", help="--spec-method draft: the draft model (same tokenizer), e.g. llama-3.2-1b.")
@click.option("--frontier", is_flag=True, help="Sweep concurrency (and, without --tp/--dp/--ep, the layouts that fit): the Pareto set of tokens/s per GPU against tokens/s per user.")
@click.option("--concurrencies", help="--frontier: users to simulate, e.g. 1,8,64,512 [default: 1, 2, 4 ... 1024].")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--plot", "plot_file", help="Write a figure (.png/.svg/.pdf): the curve for a sweep, the frontier, batch and KV over time otherwise.")
@json_option
def simulate(model: str, hw: str, frontier: bool, concurrencies: str | None, plot_file: str | None, as_json: bool,
             trace_file: str | None, **options: Any) -> None:
    """Simulate MODEL served on --hw by an engine's scheduler, step by step on the roofline.

    Give one workload: --rate R (or a list, or --sweep-rate), --concurrency N, --offline N or --trace FILE.
    """
    from tokometer.api.serving import simulate as run_simulate
    from tokometer.report.serving import plot_serving, render_curve, render_result

    if frontier:
        o = options
        if o["system_prompt"] is not None or o["system_prompt_share"] is not None or o["system_prompts"] != 1 or o["turns"] != 1:
            raise InputError("--frontier sweeps fixed lengths with nothing shared: leave out --system-prompt* and --turns")
        spec = {k: o[k] for k in ("spec_method", "spec_tokens", "spec_acceptance", "draft_model")}
        _frontier(model, hw, o["quant"], o["engine"], o["tp"], o["dp"], o["ep"], o["overlap"], o["prompt"], o["output"],
                  concurrencies, o["seed"], plot_file, as_json, spec)
        return
    if concurrencies is not None:
        raise InputError("--concurrencies goes with --frontier")
    # the options are `SimulateRequest`'s fields, by the same names
    sim = run_simulate(model, hw, trace=trace_file, progress=not as_json, **options)
    dep, workload, slo = sim.deployment, sim.workload, (sim.slo_ttft_s, sim.slo_tpot_s)
    if sim.points:
        points, k = list(sim.points), sim.knee
        if plot_file:
            written = plot_serving(plot_file, points=points, slo_ttft_s=slo[0], slo_tpot_s=slo[1], knee=k, title=dep.label)
            click.echo(f"plot written to {written.resolve()}", err=True)
        if as_json:
            click.echo(sim.to_json())
        else:
            click.echo(dep.label)
            click.echo(render_curve(points, k, slo=slo))
        return
    result = sim.result
    if plot_file:
        written = plot_serving(plot_file, result=result, title=dep.label)
        click.echo(f"plot written to {written.resolve()}", err=True)
    if as_json:
        click.echo(sim.to_json())
    else:
        click.echo(render_result(dep, result, slo=slo))
        pools = sim.disagg
        if pools is not None:
            click.echo(
                f"disaggregated: {pools.prefill_replicas} prefill + {pools.decode_replicas} decode replicas; "
                f"each prompt's KV crosses a {pools.link_bytes_per_s / 1e9:,.0f} GB/s link "
                f"({pools.transfer_s(round(workload.prompt.mean)) * 1e3:,.2f} ms for a {workload.prompt.mean:,.0f}-token prompt), "
                "counted in TTFT"
            )


def _frontier(model: str, hw: str, quant: str | None, engine: str, tp: int, dp: int, ep: int, overlap: bool, prompt: str,
              output: str, concurrencies: str | None, seed: int, plot_file: str | None, as_json: bool,
              spec: dict[str, Any]) -> None:
    """`simulate --frontier`: fixed lengths, closed loops over the concurrencies, the Pareto set (each layout
    also with speculative decoding when `--spec-method` is given)."""
    from tokometer.api.frontier import frontier
    from tokometer.report.serving import plot_frontier, render_frontier

    front = frontier(model, hw, quant=quant, engine=engine, tp=tp, dp=dp, ep=ep, overlap=overlap, prompt=prompt, output=output,
                     concurrencies=concurrencies, seed=seed, **spec)
    if plot_file:
        plot_frontier(plot_file, front.frontier)
    if as_json:
        click.echo(front.to_json())
    else:
        click.echo(f"{prompt}-in/{output}-out, closed loops; tokens/s per user = 1 / mean TPOT")
        click.echo(render_frontier(front.frontier))
