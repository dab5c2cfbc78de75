"""Human rendering of an `Estimate`: a short table, the memory verdict, one line on why."""

from __future__ import annotations

from tokometer.api import Estimate
from tokometer.report.text import num, table
from tokometer.units import GB


def _tok(value: float | None) -> str:
    return "-" if value is None else f"{num(value)} tok/s"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:,.0f} ms" if value < 1 else f"{value:,.2f} s"


def render_estimate(e: Estimate) -> str:
    d = e.to_dict()
    quant = e.quant.name if e.quant else "exact file sizes"
    head = (
        f"{e.model.name} · {quant} ({e.bits_per_weight:.2f} bits/weight, {e.weights.total / GB:.2f} GB)"
        f" · {e.hardware.name} ({num(e.hardware.memory_bandwidth_gb_per_s)} GB/s) · {e.engine.name}"
    )
    band = e.estimate_interval
    b = e.step.batch
    stream = "1 stream" if b == 1 else f"per stream, batch {b}"
    rows = [
        [f"decode ({stream})", _tok(e.ceiling_tok_s), f"{_tok(e.estimate_tok_s)} ({num(band.low)}-{num(band.high)})"],
    ]
    if b > 1:
        rows.append(["decode (aggregate)", _tok(e.ceiling_tok_s * b), _tok(e.estimate_tok_s * b)])
    rows += [
        [f"decode at {e.step.depth_tokens:,.0f} tokens of context", "", f"{e.step.time_s * 1e3:.2f} ms/token"],
        [f"prefill ({e.workload.prompt_tokens:,} tokens)", "", _tok(e.prefill.tok_s if e.prefill else None)],
        ["time to first token", "", _seconds(e.ttft_s)],
        [f"end-to-end ({e.workload.output_tokens:,} tokens out)", "", _seconds(e.e2e_s)],
    ]
    m = d["memory"]
    if m["device_memory_gb"] is None:
        verdict = f"needs {m['total_gb']:.1f} GB (no device memory given)"
    else:
        verdict = (
            f"{'fits' if m['fits'] else 'DOES NOT FIT'}: {m['total_gb']:.1f} GB needed of {m['available_gb']:.1f} GB usable"
            f" ({m['weights_gb']:.1f} weights + {m['kv_cache_gb']:.2f} KV + {m['runtime_overhead_gb']:.1f} runtime)"
        )
        extras = []
        if m["max_context_tokens"] is not None:
            extras.append(f"max context {m['max_context_tokens']:,} tokens")
        if m["max_sessions"] is not None:
            extras.append(f"{m['max_sessions']:,} sessions of {m['context_tokens']:,} tokens")
        if extras:
            verdict += "; " + ", ".join(extras)
    lines = [head, "", table(rows, ["", "ceiling", "estimate (80% band)"]), "", f"memory: {verdict}"]
    lines.append(f"feel: {d['latency']['verdict']}")
    lines.append("")
    lines += [f"why: {line}" for line in e.explanation()]
    lines += [f"note: {w}" for w in e.warnings]
    return "\n".join(lines)
