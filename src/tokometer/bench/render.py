"""Plain-text views of a run (the dict shape stored in the database): detail, list, comparison."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import Any

from tokometer.report.text import num, table


def _med(summary: Mapping[str, Any] | None, key: str) -> float | None:
    value = (summary or {}).get(key)
    return value.get("median") if isinstance(value, Mapping) else None


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


def render_run(run: Mapping[str, Any], *, with_requests: bool = False) -> str:
    s = run.get("summary") or {}
    server = run.get("server") or {}
    lines = []
    title = f"run #{run['id']}" if run.get("id") is not None else "run"
    where = run.get("url") or f"imported from {run.get('source')}"
    lines.append(
        f"{title}  {run.get('started_at', '')}  {where}  ·  {run.get('protocol') or '-'}  ·  model {run.get('model') or '?'}"
        + (f"  ·  engine {server.get('engine')}" if server.get("engine") else "")
        + ("" if run.get("status") in (None, "complete") else f"  [{run.get('status')}]")
    )
    prediction = run.get("prediction")
    if prediction:
        lines.append(render_prediction(prediction))
    decode = s.get("decode_tps") or {}
    rows: list[list[str]] = []
    if decode.get("median") is not None:
        spread = s.get("decode_spread_fraction")
        rows.append(
            [
                "decode speed (after first token)",
                f"{num(decode['median'])} tok/s",
                f"median of {decode['n']}"
                + (f", min {num(decode['min'])}, max {num(decode['max'])}" if decode["n"] > 1 else "")
                + (f", spread {spread:.0%}" if spread is not None and decode["n"] > 1 else ""),
            ]
        )
    ttft = s.get("ttft_ms") or {}
    if ttft.get("median") is not None:
        prompt = s.get("ttft_prompt_tokens")
        rows.append(
            [
                "time to first token",
                f"{num(ttft['median'])} ms",
                (f"{prompt:,.0f}-token prompt, " if prompt else "") + f"median of {ttft['n']}",
            ]
        )
    prefill = _med(s, "prefill_tps")
    if prefill is not None:
        rows.append(["prefill speed", f"{num(prefill)} tok/s", "(prompt tokens - cached) / TTFT"])
    server_tps = _med(s, "server_decode_tps")
    if server_tps is not None:
        gap = s.get("client_server_gap_fraction")
        rows.append(["server's own decode figure", f"{num(server_tps)} tok/s", f"client {gap:+.1%}" if gap is not None else ""])
    if s.get("output_throughput_tps") and run.get("mode") in ("concurrency", "rate"):
        rows.append(["output throughput", f"{num(s['output_throughput_tps'])} tok/s", "all streams, whole run"])
    if s.get("goodput_rps") is not None:
        rows.append(["goodput", f"{num(s['goodput_rps'])} req/s", f"{s.get('good_requests')} requests met the SLOs"])
    cold = s.get("cold_ttft_ms")
    rows.append(
        [
            "requests",
            f"{s.get('requests_ok', 0)} ok, {s.get('requests_failed', 0)} failed",
            (f"{s.get('cold_requests')} cold run(s) dropped" if s.get("cold_requests") else "")
            + (f" (cold TTFT {num(cold)} ms)" if cold is not None else ""),
        ]
    )
    lines.append(table(rows))
    levels = run.get("levels") or []
    if levels:
        lines.append("")
        lines.append(render_levels(levels))
    grading = run.get("grading") or {}
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
    for note in run.get("notes") or []:
        lines.append(f"   note: {note}")
    if with_requests and run.get("requests"):
        lines.append("")
        lines.append(render_requests(run["requests"]))
    return "\n".join(lines)


def render_levels(levels: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for level in levels:
        s = level.get("summary") or {}
        grade = level.get("grading") or {}
        aggregate = _med(s, "aggregate_tps")
        rows.append(
            [
                str(level.get("label")),
                num(_med(s, "decode_tps")),
                num(aggregate) if aggregate is not None else "-",
                num(_med(s, "ttft_ms")),
                _count(s.get("prompt_tokens")),
                num(grade.get("estimate_tok_s")),
                _pct(grade.get("realised_fraction")),
                f"{s.get('requests_ok', 0)}/{s.get('requests_total', 0)}",
            ]
        )
    header = ["level", "decode tok/s", "aggregate tok/s", "TTFT ms", "prompt tok", "predicted tok/s", "of ceiling", "ok"]
    return table(rows, header)


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


def render_list(runs: Sequence[Mapping[str, Any]]) -> str:
    if not runs:
        return "no runs yet: `tokometer bench URL` measures a server"
    rows = []
    for run in runs:
        s = run.get("summary") or {}
        grading = run.get("grading") or {}
        rows.append(
            [
                str(run["id"]),
                str(run.get("started_at") or "")[:16].replace("T", " "),
                str(run.get("model") or "-")[:40],
                str(run.get("hardware") or "-"),
                str(run.get("mode") or "-") + ("" if run.get("source") in (None, "tokometer") else f" ({run.get('source')})"),
                num(_med(s, "decode_tps")),
                num(_med(s, "ttft_ms")),
                f"{s.get('requests_ok', 0)}/{s.get('requests_failed', 0)}",
                _pct(grading.get("realised_fraction")),
                str(run.get("status") or ""),
            ]
        )
    return table(rows, ["id", "started (UTC)", "model", "hardware", "mode", "decode tok/s", "TTFT ms", "ok/failed", "of ceiling", "status"])


COMPARE_ROWS = (
    ("decode tok/s", lambda r: _med(r.get("summary"), "decode_tps")),
    ("TTFT ms", lambda r: _med(r.get("summary"), "ttft_ms")),
    ("prefill tok/s", lambda r: _med(r.get("summary"), "prefill_tps")),
    ("TPOT ms", lambda r: _med(r.get("summary"), "tpot_ms")),
    ("server decode tok/s", lambda r: _med(r.get("summary"), "server_decode_tps")),
    ("output throughput tok/s", lambda r: (r.get("summary") or {}).get("output_throughput_tps")),
    ("ceiling tok/s", lambda r: (r.get("prediction") or {}).get("ceiling_tok_s")),
    ("estimate tok/s", lambda r: (r.get("prediction") or {}).get("estimate_tok_s")),
    ("of ceiling", lambda r: (r.get("grading") or {}).get("realised_fraction")),
    ("requests ok", lambda r: (r.get("summary") or {}).get("requests_ok")),
    ("requests failed", lambda r: (r.get("summary") or {}).get("requests_failed")),
)


def compare_table(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric: the value of each run and its ratio to the first run."""
    rows = []
    for name, get in COMPARE_ROWS:
        values = [get(r) for r in runs]
        base = values[0]
        ratios = [v / base if isinstance(v, int | float) and isinstance(base, int | float) and base else None for v in values]
        rows.append({"metric": name, "values": values, "ratio_to_first": ratios})
    return rows


def render_compare(runs: Sequence[Mapping[str, Any]]) -> str:
    header = ["metric"] + [f"#{r['id']}" for r in runs]
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
    who = [f"#{r['id']}: {r.get('model') or '?'} @ {r.get('url') or r.get('source')} ({str(r.get('started_at'))[:16]})" for r in runs]
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


def run_csv_row(run: Mapping[str, Any]) -> dict[str, Any]:
    s = run.get("summary") or {}
    prediction = run.get("prediction") or {}
    grading = run.get("grading") or {}
    row: dict[str, Any] = {k: run.get(k) for k in ("id", "started_at", "status", "source", "url", "model", "hardware", "mode", "protocol")}
    row.update({"requests_ok": s.get("requests_ok"), "requests_failed": s.get("requests_failed")})
    for stat in ("median", "mean", "std", "min", "max"):
        row[f"decode_tps_{stat}"] = (s.get("decode_tps") or {}).get(stat)
    row["ttft_ms_median"] = _med(s, "ttft_ms")
    row["ttft_ms_p90"] = (s.get("ttft_ms") or {}).get("p90")
    for key in ("prefill_tps", "tpot_ms", "e2el_ms", "server_decode_tps"):
        row[f"{key}_median"] = _med(s, key)
    row["output_throughput_tps"] = s.get("output_throughput_tps")
    row["goodput_rps"] = s.get("goodput_rps")
    row["ceiling_tok_s"] = prediction.get("ceiling_tok_s")
    row["estimate_tok_s"] = prediction.get("estimate_tok_s")
    row["realised_fraction"] = grading.get("realised_fraction")
    row["mbu"] = grading.get("mbu")
    return row


def to_csv(runs: Sequence[Mapping[str, Any]], *, requests: bool = False) -> str:
    out = io.StringIO()
    if requests:
        writer = csv.DictWriter(out, fieldnames=CSV_REQUEST_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for run in runs:
            for r in run.get("requests") or []:
                m = r.get("metrics") or {}
                writer.writerow({**{k: r.get(k) for k in CSV_REQUEST_FIELDS}, **{k: m.get(k) for k in ("ttft_ms", "decode_tps", "tpot_ms", "e2el_ms", "prefill_tps")}, "run_id": run.get("id")})
    else:
        writer = csv.DictWriter(out, fieldnames=CSV_RUN_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for run in runs:
            writer.writerow(run_csv_row(run))
    return out.getvalue()
