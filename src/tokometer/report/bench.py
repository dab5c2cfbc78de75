"""Plain-text views of stored runs (typed `RunRecord` and `ListedRun`): detail, list, comparison, CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokometer.domain.runrecord import Level, ListedRun, RunRecord, RunSummary
from tokometer.report.bench_frontier import render_frontier_levels
from tokometer.report.text import num, table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def render_prediction(prediction: Mapping[str, Any]) -> str:
    band = prediction.get("interval_tok_s") or {}
    where = prediction.get("hardware_name") or prediction.get("hardware")
    return (
        f"predicted for {prediction.get('model')} on {where}: ceiling {num(prediction.get('ceiling_tok_s'))} tok/s, "
        f"estimate {num(prediction.get('estimate_tok_s'))} tok/s"
        + (f" ({num(band.get('low'))}-{num(band.get('high'))})" if band.get("low") is not None else "")
    )


def render_run(run: RunRecord, *, with_requests: bool = False) -> str:
    s = run.summary or RunSummary()
    server = run.server or {}
    lines = []
    title = f"run #{run.id}" if run.id is not None else "run"
    where = run.url or f"imported from {run.source}"
    lines.append(
        f"{title}  {run.started_at}  {where}  ·  {run.protocol or '-'}  ·  model {run.model or '?'}"
        + (f"  ·  engine {server.get('engine')}" if server.get("engine") else "")
        + ("" if run.status == "complete" else f"  [{run.status}]")
    )
    prediction = run.prediction
    if prediction:
        lines.append(render_prediction(prediction))
    decode = s.decode_tps
    rows: list[list[str]] = []
    if decode.median is not None:
        spread = s.decode_spread_fraction
        rows.append(
            [
                "decode speed (after first token)",
                f"{num(decode.median)} tok/s",
                f"median of {decode.n}"
                + (f", min {num(decode.min)}, max {num(decode.max)}" if decode.n > 1 else "")
                + (f", spread {spread:.0%}" if spread is not None and decode.n > 1 else ""),
            ]
        )
    ttft = s.ttft_ms
    if ttft.median is not None:
        prompt = s.ttft_prompt_tokens
        rows.append(
            [
                "time to first token",
                f"{num(ttft.median)} ms",
                (f"{prompt:,.0f}-token prompt, " if prompt else "") + f"median of {ttft.n}",
            ]
        )
    prefill = s.prefill_tps.median
    if prefill is not None:
        rows.append(["prefill speed", f"{num(prefill)} tok/s", "(prompt tokens - cached) / TTFT"])
    server_tps = s.server_decode_tps.median
    if server_tps is not None:
        gap = s.client_server_gap_fraction
        rows.append(["server's own decode figure", f"{num(server_tps)} tok/s", f"client {gap:+.1%}" if gap is not None else ""])
    throughput = s.throughput.output_throughput_tps if s.throughput is not None else None
    if throughput and run.mode in ("concurrency", "rate"):
        rows.append(["output throughput", f"{num(throughput)} tok/s", "all streams, whole run"])
    if s.goodput is not None and s.goodput.goodput_rps is not None:
        rows.append(["goodput", f"{num(s.goodput.goodput_rps)} req/s", f"{s.goodput.good_requests} requests met the SLOs"])
    cold = s.cold_ttft_ms
    rows.append(
        [
            "requests",
            f"{s.requests_ok} ok, {s.requests_failed} failed",
            (f"{s.cold_requests} cold run(s) dropped" if s.cold_requests else "")
            + (f" (cold TTFT {num(cold)} ms)" if cold is not None else ""),
        ]
    )
    lines.append(table(rows))
    if run.levels:
        lines.append("")
        lines.append(render_levels(run.levels))
        frontier = render_frontier_levels(run)
        if frontier:
            lines.append("")
            lines.append(frontier)
        simulated = [level for level in run.levels if level.simulation is not None]
        if simulated:
            lines.append("")
            lines.append(render_simulated(simulated))
    grading = run.grading or {}
    if grading.get("verdict"):
        lines.append("")
        lines.append(f"grade: {grading['verdict']}")
        if grading.get("mbu") is not None:
            lines.append(
                f"  memory bandwidth in use: {num(grading.get('achieved_bandwidth_gb_per_s'))} GB/s = "
                f"{grading['mbu']:.0%} of {num((prediction or {}).get('memory_bandwidth_gb_per_s'))} GB/s (MBU)"
            )
        if grading.get("mfu_prefill") is not None:
            lines.append(f"  prefill compute in use: {num(grading.get('achieved_prefill_tflops'))} TFLOPS = {grading['mfu_prefill']:.1%} of peak (MFU)")
    for flag in grading.get("flags") or []:
        mark = {"error": "!!", "warning": "! ", "info": "  "}.get(flag.get("severity", ""), "  ")
        lines.append(f"{mark} {flag['message']}")
    for note in run.notes:
        lines.append(f"   note: {note}")
    if with_requests and run.requests:
        lines.append("")
        lines.append(render_requests(run.requests))
    return "\n".join(lines)


def render_levels(levels: Sequence[Level]) -> str:
    rows = []
    for level in levels:
        s = level.summary or RunSummary()
        grade = level.grading or {}
        aggregate = s.aggregate_tps.median if s.aggregate_tps is not None else None
        rows.append(
            [
                level.label,
                num(s.decode_tps.median),
                num(aggregate) if aggregate is not None else "-",
                num(s.ttft_ms.median),
                _count(s.prompt_tokens),
                num(grade.get("estimate_tok_s")),
                _pct(grade.get("realised_fraction")),
                f"{s.requests_ok}/{s.requests_total}",
            ]
        )
    header = ["level", "decode tok/s", "aggregate tok/s", "TTFT ms", "prompt tok", "predicted tok/s", "of ceiling", "ok"]
    return table(rows, header)


_SIMULATED_LABELS = {
    "tput_out_tok_s": "output tok/s", "req_per_s": "requests/s",
    "ttft_ms_p50": "TTFT p50 ms", "ttft_ms_p90": "TTFT p90 ms", "ttft_ms_p99": "TTFT p99 ms",
    "tpot_ms_p50": "TPOT p50 ms", "tpot_ms_p90": "TPOT p90 ms", "tpot_ms_p99": "TPOT p99 ms",
}


def render_simulated(levels: Sequence[Level]) -> str:
    """Each level's measured figures beside the serving simulator's for the same workload."""
    lines = []
    for level in levels:
        sim = level.simulation
        assert sim is not None
        assumed = f" ({sim.engine}'s scheduler assumed: the server did not name its engine; pass --engine)" if sim.engine_assumed else ""
        lines.append(f"{level.label} simulated: {sim.deployment or sim.engine}{assumed}")
        rows = []
        for key, check in sim.metrics.items():
            err = check.error_fraction
            rows.append([_SIMULATED_LABELS.get(key, key), num(check.measured), num(check.predicted), "-" if err is None else f"{err:+.0%}"])
        lines.append(table(rows, ["", "measured", "simulated", "error"]))
        if sim.median_abs_error is not None:
            lines.append(f"median |error| {sim.median_abs_error:.0%}")
    return "\n".join(lines)


def render_requests(requests: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for r in requests:
        m = r.get("metrics") or {}
        rows.append(
            [
                str(r.get("seq")),
                r.get("phase", ""),
                r.get("label", ""),
                "ok" if r.get("ok") else str(r.get("error_kind") or "failed"),
                num(m.get("ttft_ms")),
                num(m.get("decode_tps")),
                str(r.get("output_tokens") if r.get("output_tokens") is not None else "-"),
                str(r.get("prompt_tokens") if r.get("prompt_tokens") is not None else "-"),
                str(r.get("finish_reason") or "-"),
                (r.get("error") or "")[:60],
            ]
        )
    return table(rows, ["#", "phase", "level", "status", "TTFT ms", "decode tok/s", "out", "prompt", "finish", "error"])


def render_list(runs: Sequence[ListedRun]) -> str:
    if not runs:
        return "no runs yet: `tokometer bench URL` measures a server"
    rows = []
    for run in runs:
        s = run.summary or RunSummary()
        grading = run.grading or {}
        rows.append(
            [
                str(run.id),
                run.started_at[:16].replace("T", " "),
                (run.model or "-")[:40],
                run.hardware or "-",
                (run.mode or "-") + ("" if run.source == "tokometer" else f" ({run.source})"),
                num(s.decode_tps.median),
                num(s.ttft_ms.median),
                f"{s.requests_ok}/{s.requests_failed}",
                _pct(grading.get("realised_fraction")),
                run.status,
            ]
        )
    return table(rows, ["id", "started (UTC)", "model", "hardware", "mode", "decode tok/s", "TTFT ms", "ok/failed", "of ceiling", "status"])


def _summary(run: RunRecord) -> RunSummary:
    return run.summary or RunSummary()


def _output_throughput(run: RunRecord) -> float | None:
    through = _summary(run).throughput
    return through.output_throughput_tps if through is not None else None


COMPARE_ROWS: tuple[tuple[str, Callable[[RunRecord], Any]], ...] = (
    ("decode tok/s", lambda r: _summary(r).decode_tps.median),
    ("TTFT ms", lambda r: _summary(r).ttft_ms.median),
    ("prefill tok/s", lambda r: _summary(r).prefill_tps.median),
    ("TPOT ms", lambda r: _summary(r).tpot_ms.median),
    ("server decode tok/s", lambda r: _summary(r).server_decode_tps.median),
    ("output throughput tok/s", _output_throughput),
    ("ceiling tok/s", lambda r: (r.prediction or {}).get("ceiling_tok_s")),
    ("estimate tok/s", lambda r: (r.prediction or {}).get("estimate_tok_s")),
    ("of ceiling", lambda r: (r.grading or {}).get("realised_fraction")),
    ("requests ok", lambda r: _summary(r).requests_ok if r.summary is not None else None),
    ("requests failed", lambda r: _summary(r).requests_failed if r.summary is not None else None),
)


def compare_table(runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One row per metric: the value of each run and its ratio to the first run."""
    rows = []
    for name, get in COMPARE_ROWS:
        values = [get(r) for r in runs]
        base = values[0]
        ratios = [v / base if isinstance(v, int | float) and isinstance(base, int | float) and base else None for v in values]
        rows.append({"metric": name, "values": values, "ratio_to_first": ratios})
    return rows


def render_compare(runs: Sequence[RunRecord]) -> str:
    header = ["metric"] + [f"#{r.id}" for r in runs]
    rows = []
    for row in compare_table(runs):
        cells = [row["metric"]]
        for i, value in enumerate(row["values"]):
            if row["metric"] == "of ceiling":
                text = _pct(value)
            elif isinstance(value, int):
                text = str(value)
            else:
                text = num(value) if isinstance(value, float) else "-"
            ratio = row["ratio_to_first"][i]
            if i > 0 and ratio is not None and row["metric"] != "of ceiling":
                text += f" ({ratio - 1:+.0%})"
            cells.append(text)
        rows.append(cells)
    who = [f"#{r.id}: {r.model or '?'} @ {r.url or r.source} ({r.started_at[:16]})" for r in runs]
    return "\n".join(who) + "\n\n" + table(rows, header)


CSV_RUN_FIELDS = (
    "id", "started_at", "status", "source", "url", "model", "hardware", "mode", "protocol",
    "requests_ok", "requests_failed", "decode_tps_median", "decode_tps_mean", "decode_tps_std",
    "decode_tps_min", "decode_tps_max", "ttft_ms_median", "ttft_ms_p90", "prefill_tps_median",
    "tpot_ms_median", "e2el_ms_median", "server_decode_tps_median", "output_throughput_tps",
    "goodput_rps", "ceiling_tok_s", "estimate_tok_s", "realised_fraction", "mbu",
)  # fmt: skip
CSV_REQUEST_FIELDS = (
    "run_id", "seq", "phase", "label", "group", "ok", "error_kind", "error", "ttft_ms", "decode_tps",
    "tpot_ms", "e2el_ms", "prefill_tps", "output_tokens", "output_tokens_source", "prompt_tokens",
    "cached_tokens", "finish_reason", "server_decode_tps",
)  # fmt: skip


def run_csv_row(run: RunRecord) -> dict[str, Any]:
    s = _summary(run)
    prediction = run.prediction or {}
    grading = run.grading or {}
    row: dict[str, Any] = {k: getattr(run, k) for k in ("id", "started_at", "status", "source", "url", "model", "hardware", "mode", "protocol")}
    present = run.summary is not None
    row.update({"requests_ok": s.requests_ok if present else None, "requests_failed": s.requests_failed if present else None})
    for stat in ("median", "mean", "std", "min", "max"):
        row[f"decode_tps_{stat}"] = getattr(s.decode_tps, stat)
    row["ttft_ms_median"] = s.ttft_ms.median
    row["ttft_ms_p90"] = s.ttft_ms.p90
    for key in ("prefill_tps", "tpot_ms", "e2el_ms", "server_decode_tps"):
        row[f"{key}_median"] = getattr(s, key).median
    row["output_throughput_tps"] = _output_throughput(run)
    row["goodput_rps"] = s.goodput.goodput_rps if s.goodput is not None else None
    row["ceiling_tok_s"] = prediction.get("ceiling_tok_s")
    row["estimate_tok_s"] = prediction.get("estimate_tok_s")
    row["realised_fraction"] = grading.get("realised_fraction")
    row["mbu"] = grading.get("mbu")
    return row


def to_csv(runs: Sequence[RunRecord], *, requests: bool = False) -> str:
    out = io.StringIO()
    if requests:
        writer = csv.DictWriter(out, fieldnames=CSV_REQUEST_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for run in runs:
            for r in run.requests:
                m = r.get("metrics") or {}
                writer.writerow({**{k: r.get(k) for k in CSV_REQUEST_FIELDS}, **{k: m.get(k) for k in ("ttft_ms", "decode_tps", "tpot_ms", "e2el_ms", "prefill_tps")}, "run_id": run.id})
    else:
        writer = csv.DictWriter(out, fieldnames=CSV_RUN_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for run in runs:
            writer.writerow(run_csv_row(run))
    return out.getvalue()
