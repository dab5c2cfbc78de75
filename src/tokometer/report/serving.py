"""Text and figures for `tokometer simulate`: the serving report, the latency-throughput curve.

The JSON shape is `ServingResult.to_dict()` plus the deployment; the text shows throughput, the
latency percentiles, queueing, KV use, preemptions and the why (what bound the steps, where the
time went). matplotlib is imported only when a plot is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokometer.report.plots import _pyplot
from tokometer.report.text import num, table

if TYPE_CHECKING:
    from tokometer.costmodel.serving import ServingResult, Summary
    from tokometer.usecases.simulate import CurvePoint, Deployment


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:,.1f}"


def _row(name: str, s: Summary) -> list[str]:
    return [name, _ms(s.mean), _ms(s.p50), _ms(s.p90), _ms(s.p99)]


def render_result(dep: Deployment, r: ServingResult, *, slo: tuple[float | None, float | None] = (None, None)) -> str:
    lines = [
        f"{dep.label} · KV cache {dep.kv_capacity_tokens:,.0f} tokens"
        + (f" · {r.replicas} replicas" if r.replicas > 1 else ""),
        "",
        f"requests: {r.completed:,} completed of {r.requests:,}"
        + (f", {r.rejected:,} rejected ({'; '.join(f'{n:,} {why}' for why, n in r.rejected_by_reason.items())})"
           if r.rejected else "")
        + (f", {r.truncated:,} cut short when their context filled" if r.truncated else "")
        + f" in {r.duration_s:,.1f} s",
        f"throughput: {r.req_per_s:,.2f} req/s · {r.tput_out_tok_s:,.0f} output tok/s · "
        f"{r.tput_in_tok_s:,.0f} input tok/s · {r.tput_total_tok_s:,.0f} total tok/s",
        "",
        table(
            [_row("time to first token", r.ttft_s), _row("time per output token", r.tpot_s),
             _row("inter-token latency", r.itl_s), _row("end-to-end", r.e2e_s), _row("queueing", r.queue_s)],
            ["latency (ms)", "mean", "p50", "p90", "p99"],
        ),
        "",
        f"batch: {r.mean_batch:,.1f} sequences on average · KV cache {r.mean_kv_utilisation:.0%} used on average"
        f" · {r.preemptions:,} preemptions · {r.steps:,} engine steps",
    ]
    if r.prefix_hit_share:
        lines.append(
            f"prefix cache: {r.prefix_hit_share:.0%} of admitted prompt tokens were served from the cache"
            + (f" · {r.prefix_evicted_tokens:,} cached tokens evicted" if r.prefix_evicted_tokens else "")
        )
    if r.goodput_share is not None and (slo[0] is not None or slo[1] is not None):
        parts = [f"TTFT <= {slo[0] * 1e3:g} ms" if slo[0] is not None else "", f"TPOT <= {slo[1] * 1e3:g} ms" if slo[1] is not None else ""]
        lines.append(
            f"goodput: {r.goodput_share:.0%} of requests meet {' and '.join(p for p in parts if p)} "
            f"({r.goodput_req_per_s or 0:,.2f} req/s)"
        )
    busy = r.time_prefill_s + r.time_decode_s
    if busy > 0:
        share = {k: v / busy for k, v in r.bound_s.items() if v > 0}
        bound = ", ".join(f"{k} {v:.0%}" for k, v in sorted(share.items(), key=lambda kv: -kv[1]))
        lines.append(f"why: engine steps were bound by {bound} of their time")
        lines.append(
            f"why: step time went {r.time_prefill_s / busy:.0%} to prefill tokens and {r.time_decode_s / busy:.0%} "
            f"to decode tokens; mean queueing {_ms(r.queue_s.mean)} ms of a {_ms(r.e2e_s.mean)} ms mean request"
        )
    slices = dep.cost.expert_slice_scale
    if slices > 1.0:
        lines.append(
            f"why: tensor parallelism splits every routed expert {dep.setup.layout.expert_ways} ways, so a prompt's "
            f"expert GEMMs run on slices, {slices:.2f}x the time of whole experts (--ep keeps them whole)"
        )
    lag_ms = dep.policy.request_latency_ms
    if lag_ms > 0:
        lines.append(
            f"why: every time to first token includes {lag_ms:g} ms of {dep.serving.id}'s serving stack outside the "
            "forward passes (request_latency_ms, a sourced prior: serving_engines.toml)"
        )
    return "\n".join(lines)


def rate_text(rate_per_s: float) -> str:
    """An offered rate as a person writes it: 3 significant figures, no trailing zeros (2.3, 17, 0.125)."""
    return f"{float(f'{rate_per_s:.3g}'):,g}"


def _slo_words(slo: tuple[float | None, float | None]) -> str:
    parts = [f"TTFT <= {slo[0] * 1e3:g} ms" if slo[0] is not None else "", f"TPOT <= {slo[1] * 1e3:g} ms" if slo[1] is not None else ""]
    return " and ".join(p for p in parts if p)


def render_curve(points: Sequence[CurvePoint], knee: CurvePoint | None,
                 slo: tuple[float | None, float | None] = (None, None)) -> str:
    """The latency-throughput table: every column headed with its unit, rates to 3 significant
    figures, and with objectives the goodput (requests meeting all of them) at each rate."""
    with_slo = slo[0] is not None or slo[1] is not None
    rows = []
    for p in points:
        r = p.result
        row = [rate_text(p.rate_per_s), num(r.req_per_s), num(r.tput_out_tok_s), _ms(r.ttft_s.p50), _ms(r.ttft_s.p99),
               _ms(r.tpot_s.mean), _ms(r.e2e_s.p99)]
        if with_slo:
            row += [num(r.goodput_req_per_s or 0.0), "-" if r.goodput_share is None else f"{r.goodput_share:.0%}"]
        rows.append(row + ["knee" if p is knee else ""])
    header = ["offered req/s", "served req/s", "out tok/s", "TTFT p50 ms", "TTFT p99 ms", "TPOT mean ms", "E2E p99 ms"]
    header += ["goodput req/s", "meet SLO"] if with_slo else []
    text = table(rows, header + ["knee"])
    tail = (
        f"knee: {rate_text(knee.rate_per_s)} req/s is the highest rate served with p99 TTFT within 3x of light load"
        if knee else "knee: no rate was served with p99 TTFT within 3x of light load"
    )
    if with_slo:
        best = max(points, key=lambda p: p.result.goodput_req_per_s or 0.0, default=None)
        if best is not None and (best.result.goodput_req_per_s or 0.0) > 0:
            tail += (f"\ngoodput: at most {num(best.result.goodput_req_per_s)} req/s meet {_slo_words(slo)} "
                     f"(offered {rate_text(best.rate_per_s)} req/s)")
        else:
            tail += f"\ngoodput: no rate has a request meeting {_slo_words(slo)}"
    return text + "\n" + tail


def curve_dict(points: Sequence[CurvePoint], knee: CurvePoint | None) -> dict[str, Any]:
    return {
        "points": [{"rate_per_s": p.rate_per_s, **p.result.to_dict()} for p in points],
        "knee_rate_per_s": knee.rate_per_s if knee else None,
    }


def plot_serving(path: str | Path, result: ServingResult | None = None, points: Sequence[CurvePoint] = (),
                 slo_ttft_s: float | None = None, *, knee: CurvePoint | None = None, title: str | None = None,
                 slo_tpot_s: float | None = None) -> Path:
    """A latency-throughput curve for a sweep (titled, the knee marked and labelled with its rate,
    the objectives drawn); batch and KV use over time for one run."""
    plt, target = _pyplot(path)
    fig, ax = plt.subplots(figsize=(8, 5))
    if points:
        x = [p.result.tput_out_tok_s for p in points]
        ax.plot(x, [(p.result.ttft_s.p99 or 0) * 1e3 for p in points], "o-", label="TTFT p99")
        ax.plot(x, [(p.result.tpot_s.mean or 0) * 1e3 for p in points], "s-", label="TPOT mean")
        for index, p in enumerate(points):  # each point's offered rate, rounded
            ax.annotate(f"{rate_text(p.rate_per_s)}/s", (x[index], (p.result.ttft_s.p99 or 0) * 1e3), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=7)
        if knee is not None:
            at = knee.result.tput_out_tok_s
            ax.axvline(at, color="grey", linestyle=":", label=f"knee: {rate_text(knee.rate_per_s)} req/s")
            ax.plot([at], [(knee.result.ttft_s.p99 or 0) * 1e3], "k*", markersize=14)
        if slo_ttft_s is not None:
            ax.axhline(slo_ttft_s * 1e3, color="red", linestyle="--", label="TTFT SLO")
        if slo_tpot_s is not None:
            ax.axhline(slo_tpot_s * 1e3, color="purple", linestyle="--", label="TPOT SLO")
        ax.set_xlabel("output tokens/s")
        ax.set_ylabel("ms")
        ax.set_yscale("log")
        ax.set_title(f"Latency against throughput: {title}" if title else "Latency against throughput")
    elif result is not None:
        ax.plot([t for t, _ in result.batch_over_time], [b for _, b in result.batch_over_time], label="running sequences")
        ax2 = ax.twinx()
        ax2.plot([t for t, _ in result.kv_over_time], [k * 100 for _, k in result.kv_over_time], color="orange", label="KV used (%)")
        ax2.set_ylabel("KV cache used (%)")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("sequences")
        ax.set_title(f"Batch and KV cache over time: {title}" if title else "Batch and KV cache over time")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return target


def render_frontier(front: Any) -> str:
    """The Pareto set of a `usecases.frontier.Frontier` as a table, most interactive first."""
    rows = [
        [p.hardware, p.quant, p.layout, str(p.gpus), str(p.concurrency), f"{p.tok_s_per_gpu:,.0f}", f"{p.tok_s_per_user:,.1f}",
         f"{(p.result.ttft_s.mean or 0) * 1e3:,.0f}", f"{(p.result.ttft_s.p99 or 0) * 1e3:,.0f}"]
        for p in front.pareto
    ]
    head = ["hardware", "quant", "layout", "GPUs", "users", "tok/s/GPU", "tok/s/user", "TTFT mean ms", "TTFT p99 ms"]
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(front.skipped.items(), key=lambda kv: -kv[1]))
    return (table(rows, head) + f"\nfrontier: {len(front.pareto)} of {len(front.points)} simulated points"
            + (f"; skipped: {skipped}" if skipped else ""))


def plot_frontier(path: str | Path, front: Any) -> Path:
    """Every simulated point (tokens/s per user against tokens/s per GPU), one colour per layout, the frontier joined."""
    plt, target = _pyplot(path)
    fig, ax = plt.subplots(figsize=(8, 5))
    groups: dict[str, list[Any]] = {}
    for p in front.points:
        groups.setdefault(f"{p.hardware} {p.quant} {p.layout}", []).append(p)
    for label, pts in groups.items():
        ax.plot([p.tok_s_per_user for p in pts], [p.tok_s_per_gpu for p in pts], "o", alpha=0.5, label=label)
    best = front.pareto
    ax.plot([p.tok_s_per_user for p in best], [p.tok_s_per_gpu for p in best], "k-", linewidth=2, label="frontier")
    ax.set_xlabel("output tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(target)
    plt.close(fig)
    return target
