"""Human rendering of an `Estimate` and of the reports built on it (utilisation, fit, sweep).

Each renderer reads the same dictionaries `--json` prints, so text and JSON cannot disagree.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

from tokometer.domain.units import GB
from tokometer.report.json import estimate_json, estimate_warnings, explanation, utilization_dict
from tokometer.report.text import num, table

if TYPE_CHECKING:  # annotations only: `tokometer estimate` need not load fit, sweep or utilization
    from tokometer.usecases.estimate import Estimate
    from tokometer.usecases.fit import FitReport
    from tokometer.usecases.sweep import SweepResult
    from tokometer.usecases.utilization import UtilizationReport


def _tok(value: float | None) -> str:
    return "-" if value is None else f"{num(value)} tok/s"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:,.0f} ms" if value < 1 else f"{value:,.2f} s"


def _tokens(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:g}k" if value >= 1024 and value % 1024 == 0 else f"{value:,.0f}"


def _prefill_cell(e: Estimate) -> str:
    """Prefill's estimate with its 80 % band (the band `tokometer validate` scores)."""
    if e.prefill is None:
        return "-"
    band = e.prefill_interval
    return _tok(e.prefill.tok_s) + (f" ({num(band.low)}-{num(band.high)})" if band else "")


def _ttft_cell(e: Estimate) -> str:
    """TTFT with its 80 % band, in one unit: "61 ms (38-99 ms)", "1.20 s (0.75-1.93 s)"."""
    band = e.ttft_interval
    if e.ttft_s is None or band is None:
        return _seconds(e.ttft_s)
    if band.high < 1:
        return f"{e.ttft_s * 1e3:,.0f} ms ({band.low * 1e3:,.0f}-{band.high * 1e3:,.0f} ms)"
    return f"{e.ttft_s:,.2f} s ({band.low:,.2f}-{band.high:,.2f} s)"


def _depth_row(e: Estimate) -> list[str]:
    """Time per token at the workload's context; with a draft, the speculative one (pass / tokens per pass)."""
    label = f"decode at {e.step.depth_tokens:,.0f} tokens of context"
    if e.draft is None:
        return [label, "", f"{e.step.time_s * 1e3:.2f} ms/token"]
    sp = e.draft.speculation
    return [label + ", speculative", "", f"{sp.pass_time_s / sp.tokens_per_pass * 1e3:.2f} ms/token"]


def render_estimate(e: Estimate) -> str:
    d = estimate_json(e)
    quant = e.quant.name if e.quant else "exact file sizes"
    par = d["parallel"]
    where = e.hardware.name if par["devices"] == 1 else f"{par['devices']} x {e.hardware.name}"
    head = (
        f"{e.model.name} · {quant} ({e.bits_per_weight:.2f} bits/weight, {e.weights.total / GB:.2f} GB)"
        f" · {where} ({num(e.hardware.memory_bandwidth_gb_per_s)} GB/s) · {e.engine.name}"
    )
    band = e.estimate_interval
    b = e.step.batch
    stream = "1 stream" if b == 1 else f"per stream, batch {b}"
    rows = [
        [f"decode ({stream})", _tok(e.ceiling_tok_s), f"{_tok(e.estimate_tok_s)} ({num(band.low)}-{num(band.high)})"],
    ]
    fit = d["fit"]
    if b > 1:
        rows.append(["decode (aggregate)", _tok(e.ceiling_tok_s * b), _tok(e.estimate_tok_s * b)])
    spec = d["speculative"]
    if spec["active"]:
        rows.append(
            [
                f"decode, speculative ({spec['draft']}, a={spec['acceptance']:g}, k={spec['draft_tokens']})",
                _tok(spec["ceiling_tok_s"]),
                f"{_tok(spec['tok_s'])} ({spec['speedup']:.2f}x)",
            ]
        )
    rows += [
        _depth_row(e),
        [f"prefill ({e.workload.prompt_tokens:,} tokens)", _tok(e.prefill_ceiling_tok_s), _prefill_cell(e)],
        ["time to first token", "", _ttft_cell(e)],
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
    if fit["fits"] or fit["headline"] is None:
        lines = [head, "", table(rows, ["", "ceiling", "estimate (80% band)"]), "", f"memory: {verdict}"]
    else:  # the verdict first; every speed below is what it would do if it fit
        lines = [head, "", "DOES NOT FIT" + fit["headline"].removeprefix("does not fit")]
        lines += [f"  - {r['text']}" for r in fit["remedies"]]
        lines += ["", "as set, if it fit:", table(rows, ["", "ceiling if it fit", "estimate if it fit (80% band)"])]
        lines += ["", f"memory: {verdict}"]
    lines += _lever_lines(d)
    lines.append(f"feel{'' if fit['fits'] else ' (if it fit)'}: {d['latency']['verdict']}")
    lines.append("")
    lines += [f"why: {line}" for line in explanation(e)]
    lines += [f"note: {w}" for w in estimate_warnings(e) if fit["fits"] or not w.startswith("does not fit:")]
    return "\n".join(lines)


def _lever_lines(d: dict[str, Any]) -> list[str]:
    lines = []
    par = d["parallel"]
    if par["devices"] > 1:
        lines.append(
            f"parallel: TP {par['tp']} x PP {par['pp']}"
            + (f" x DP {par['dp']}, EP {par['ep']}, {par['nodes']} node(s)"
               + (f" joined by {par['inter_link']} ({num(par['inter_link_gb_per_s'])} GB/s per GPU)" if par["inter_link"] else "")
               + f", {par['moe_comm_time_s'] * 1e3:.2f} ms/step of expert all-to-all" if "ep" in par else "")
            + f" over {par['link']} ({num(par['link_gb_per_s'])} GB/s per "
            f"direction): {par['speedup']:.2f}x one device ({_tok(par['single_device_tok_s'])}); "
            f"{par['comm_time_s'] * 1e3:.2f} ms/token of all-reduces and hops; "
            f"{par['memory_per_device_gb']:.1f} GB per device"
        )
    off = d["offload"]
    if off["active"] and off.get("expert_layers"):
        lines.append(
            f"offload: all {off['n_layers']} layers on the GPU ({off['gpu_weights_gb']:.1f} GB), the routed experts of "
            f"{off['expert_layers']} in system RAM on {off['cpu_hw']} ({off['cpu_weights_gb']:.1f} GB, needs "
            f"{off['cpu_memory_gb']:.1f} of {off['cpu_available_gb']:.1f} GB); every expert on the GPU "
            f"{_tok(off['gpu_only_tok_s'])}"
        )
    elif off["active"]:
        lines.append(
            f"offload: {off['gpu_layers']}/{off['n_layers']} layers on the GPU ({off['gpu_weights_gb']:.1f} GB), "
            f"{off['cpu_layers']} {'on ' + off['cpu_hw'] if off['mode'] == 'cpu' else 'streamed over ' + off['link']} "
            f"({off['cpu_weights_gb']:.1f} GB, needs {off['cpu_memory_gb']:.1f} of {off['cpu_available_gb']:.1f} GB); "
            f"all on GPU {_tok(off['gpu_only_tok_s'])}, none {_tok(off['cpu_only_tok_s'])}"
        )
    ctx = d["context"]
    far = [p for p in ctx["curve"] if p["depth_tokens"] > max(ctx["depth_tokens"], 0)]
    if far:
        deep = far[min(len(far) - 1, 4)]
        lines.append(
            f"context: {_tok(ctx['empty_tok_s'])} empty, {_tok(ctx['at_depth_tok_s'])} at "
            f"{_tokens(ctx['depth_tokens'])}, {_tok(deep['estimate_tok_s'])} at {_tokens(deep['depth_tokens'])} "
            f"tokens ({ctx['kv_dtype']} KV, {num(ctx['kv_bytes_per_token'] / 1e3)} kB per token)"
        )
    bat = d["batching"]
    big = [p for p in bat["curve"] if p["fits"]]
    if big:
        top = big[-1]
        ridge = bat["compute_bound_batch"]
        lines.append(
            f"batching: {_tok(top['aggregate_tok_s'])} aggregate at batch {top['batch']} "
            f"({_tok(top['per_stream_tok_s'])} each)"
            + (f"; compute-bound from batch {ridge:,}" if ridge else "")
            + (f"; {top['experts_touched']:.1f} of {bat['n_experts']} experts read per layer at batch {top['batch']}" if bat["n_experts"] and top.get("experts_touched") else "")
            + " (one decode step, prefill not charged: `tokometer simulate --concurrency B` for the steady state)"
        )
    return lines


def render_utilization(report: UtilizationReport) -> str:
    d = utilization_dict(report)
    u = d["utilization"]
    e = report.estimate
    rows = [
        ["decode", _tok(u["measured_decode_tok_s"]), _tok(u["ceiling_tok_s"]), _tok(u["estimate_tok_s"]),
         f"{u['ceiling_fraction']:.0%}"],
    ]
    if u["measured_prefill_tok_s"] is not None:
        rows.append(
            ["prefill", _tok(u["measured_prefill_tok_s"]), _tok(u["prefill_ceiling_tok_s"]),
             _tok(e.prefill.tok_s if e.prefill else None),
             "-" if u["prefill_ceiling_fraction"] is None else f"{u['prefill_ceiling_fraction']:.0%}"]
        )
    lines = [
        f"{e.model.name} · {e.quant.name if e.quant else 'exact file sizes'} · {e.hardware.name} · {e.engine.name}",
        "",
        table(rows, ["", "measured", "ceiling", "estimate", "of ceiling"]),
        "",
        f"MBU {u['mbu']:.0%}: {num(u['achieved_bandwidth_gb_per_s'])} of {num(u['datasheet_bandwidth_gb_per_s'])} GB/s"
        + ("" if u["mfu"] is None else f"; MFU {u['mfu']:.2%} (decode)")
        + ("" if u["prefill_mfu"] is None else f"; MFU {u['prefill_mfu']:.0%} (prefill)"),
        f"verdict: {u['verdict']}",
    ]
    lines += [f"finding: {f}" for f in u["findings"]]
    lines += [f"note: {w}" for w in d["warnings"]]
    return "\n".join(lines)


FIT_TOP_ROWS = 20  # `tokometer fit` prints this many rows unless --all


def render_fit(report: FitReport, *, limit: int | None = FIT_TOP_ROWS) -> str:
    """The fit table, names as users write them (Q4_K_M, llama.cpp); the first `limit` rows (None: all)."""
    hw = report.hardware
    shown = report.rows if limit is None else report.rows[:limit]
    rows = [
        [
            r.model,
            r.quant_name,
            f"{r.weights_gb:.1f}",
            f"{r.total_gb:.1f}",
            _tok(r.ceiling_tok_s),
            _tok(r.estimate_tok_s),
            "-" if r.max_context_tokens is None else f"{r.max_context_tokens:,}",
            "-" if r.max_sessions is None else f"{r.max_sessions:,}",
            r.engine_name,
            r.reason,
        ]
        for r in shown
    ]
    head = (
        f"{hw.name} ({num(hw.memory_gb)} GB, {num(hw.memory_bandwidth_gb_per_s)} GB/s): "
        f"models and quants at {report.context_tokens:,} tokens of context x {report.sessions} session(s)"
        + (f", at least {report.min_speed_tok_s:g} tok/s" if report.min_speed_tok_s else "")
    )
    if not rows:
        return head + "\n\nnothing fits; try --all to see why"
    lines = [
        head,
        "",
        table(
            rows,
            ["model", "quant", "weights GB", "needs GB", "ceiling", "estimate", "max context", "sessions",
             "engine", "verdict"],
        ),
    ]
    if len(shown) < len(report.rows):
        lines += ["", f"{len(shown)} of {len(report.rows)} rows, largest models first; --best keeps one per model, "
                  "--all lists every row and what does not fit"]
    return "\n".join(lines)


SWEEP_COLUMNS = (
    "model", "hardware", "quant", "engine", "context_tokens", "batch", "ceiling_tok_s", "estimate_tok_s",
    "aggregate_tok_s", "step_time_s", "bound", "memory_gb", "fits",
)


def render_sweep_table(result: SweepResult) -> str:
    rows = [
        [
            r["model"], r["hardware"], r["quant"], r["engine"], f"{r['context_tokens']:,}", str(r["batch"]),
            _tok(r["ceiling_tok_s"]), _tok(r["estimate_tok_s"]), _tok(r["aggregate_tok_s"]), r["bound"],
            f"{r['memory_gb']:.1f}", "yes" if r["fits"] else "no",
        ]
        for r in result.records()
    ]
    header = ["model", "hardware", "quant", "engine", "context", "batch", "ceiling", "estimate", "aggregate",
              "bound", "GB", "fits"]
    return table(rows, header)


def render_sweep_csv(result: SweepResult) -> str:
    import csv  # only the sweep's CSV output pays for it

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SWEEP_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in result.records():
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in record.items()})
    return out.getvalue().rstrip("\n")
