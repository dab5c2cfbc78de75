"""Diagnose the published serving rows (issue 29): score them as `serving_validate` does and dump,
per row, its setup, predicted / measured and the step-cost breakdown of a representative decode step
(batch = the run's concurrency or its steady offline batch) and of a 1k-token prefill chunk.

    PYTHONPATH=src python scripts/moe_diagnosis.py [--sources A,B] [--moe | --family WORDS] [--json out.json]

`--sources` and `--family` select as `tokometer validate --serving --only/--family` does
(`fitting/serving_select.py`: an unknown publication or family word stops with the known list); for the
held-out error alone, `tokometer validate --serving --only SOURCE` is the tool.

Columns: the time of one decode step split into weights memory, expert bytes (their share of it),
GEMM compute, KV memory, attention compute, TP all-reduce, MoE all-to-all and the fixed overheads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict

from tokometer.catalog.serving import serving_efficiency
from tokometer.fitting.serving_families import family, metric_class, published_paths
from tokometer.fitting.serving_runs import group_runs, read_rows
from tokometer.fitting.serving_select import family_words, matches, resolve_sources
from tokometer.fitting.serving_validate import deploy_run, predict

TIME_LIMIT_S = 120.0  # per simulated run, as scripts/serving_accuracy.py: a limit only against a hang, so a
# loaded machine does not unscore slow runs (the default 10 s dropped 3-8 MoE rows under contention)


def breakdown(run, batch: float) -> dict[str, float]:
    dep = deploy_run(run, serving_efficiency(run.engine))
    c = dep.cost
    wl = run.workload
    depth = (wl.prompt.mean + wl.output.mean / 2) if wl is not None else 1000.0
    b = max(1.0, batch)
    w, mm, kv, att, fixed = c.split(b, b * depth, b * depth, b)
    routed = c.routed_bytes * (1.0 - (1.0 - c.experts_k_over_e) ** b)
    comm = c.comm_s(b)
    moe_comm = c.moe_comm_fixed_s + c.moe_comm_per_token_s * b
    step = c.time_s(b, b * depth, b * depth, b)
    pw, pm, pkv, patt, pfix = c.split(1024.0, 0.0, 1024.0 * 512, 1.0, prefill_tokens=1024.0)
    return {
        "B": b, "step_ms": step * 1e3, "w_ms": w * 1e3, "exp_ms": routed / c.bandwidth_bytes_per_s * 1e3,
        "gemm_ms": mm * 1e3, "kv_ms": kv * 1e3, "att_ms": att * 1e3, "ar_ms": comm * 1e3, "a2a_ms": moe_comm * 1e3,
        "ovh_ms": (c.overhead_s + c.sequence_overhead_s * b) * 1e3,
        "pf1k_ms": c.time_s(1024.0, 0.0, 1024.0 * 512, 1.0, prefill_tokens=1024.0) * 1e3,
        "pf_gemm_ms": pm * 1e3, "pf_w_ms": pw * 1e3,
        "wbytes_GB": c.weight_fixed_bytes / 1e9, "routedGB": c.routed_bytes / 1e9,
        "peakT": c.peak_flops / 1e12, "bwGBs": c.bandwidth_bytes_per_s / 1e9,
        "wdtype": f"{dep.setup.weights.bits_per_weight if hasattr(dep.setup.weights, 'bits_per_weight') else ''}",
        "peak_dtype": dep.setup.peak.dtype,
    }


def print_worst(records: list[dict], n: int) -> None:
    """The `n` setups (source, engine, device, model, format, layout) whose rows read worst, with the median
    predicted / measured ratio per metric class and the decode-step split at the run's concurrency."""
    setups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        setups[(r["source"], r["engine"], r["hw"], r["model"], r["quant"], r["tp"], r["ep"], r["dp"])].append(r)
    ranked = sorted(setups.items(), key=lambda kv: -statistics.median(abs(r["ratio"] - 1) for r in kv[1]))
    for key, recs in ranked[:n]:
        ratios = {c: statistics.median(r["ratio"] for r in recs if r["cls"] == c)
                  for c in ("throughput", "ttft", "itl") if any(r["cls"] == c for r in recs)}
        low = min(recs, key=lambda r: r["conc"])
        split = " ".join(f"{k}={low[k]:.2f}" for k in ("step_ms", "w_ms", "gemm_ms", "kv_ms", "att_ms", "ar_ms", "a2a_ms", "ovh_ms")
                         if isinstance(low.get(k), float))
        print(" | ".join(map(str, key)), f"rows={len(recs)}",
              " ".join(f"{c}={v:.2f}x" for c, v in ratios.items()), f"@{low['conc']}: {split}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", default="")
    ap.add_argument("--moe", action="store_true", help="only MoE runs (--family MoE)")
    ap.add_argument("--family", default=None, help="serving-family words, as validate --serving --family ('MoE Hopper')")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-breakdown", action="store_true")
    ap.add_argument("--worst", type=int, default=0, help="print the N setups with the largest median error")
    a = ap.parse_args(argv)
    wanted = set(resolve_sources(a.sources.split(","), [p.stem for p in published_paths()]))
    words = family_words(" ".join(w for w in ("MoE" if a.moe else "", a.family or "") if w) or None)
    out = []
    by_group: dict[str, list[float]] = defaultdict(list)
    for path in published_paths():
        if wanted and path.stem not in wanted:
            continue
        rows, bad = read_rows(path)
        runs = [r for r in group_runs(rows) if matches(family(r), words)]
        results = predict(runs, serving_efficiency, naive=False, time_limit_s=TIME_LIMIT_S)
        by_id = {res.row.row_id: res for res in results}
        for run in runs:
            fam = family(run)
            bd = {}
            if run.reason is None and not a.no_breakdown:
                try:
                    bd = breakdown(run, run.batch)
                except Exception as exc:  # noqa: BLE001 - diagnosis only
                    bd = {"err": str(exc)}
            kw = run.deploy_kwargs
            for r in run.rows:
                res = by_id.get(r.row_id)
                cls = metric_class(r.metric)
                if res is None or res.ape is None or cls is None:
                    continue
                rec = {
                    "source": r.source, "engine": run.engine, "hw": kw["hw"].id, "model": kw["model"].name,
                    "quant": kw["quant"], "tp": kw.get("tp"), "ep": kw.get("ep", 1), "dp": kw.get("dp", 1),
                    "conc": run.batch, "scenario": r.scenario, "metric": r.metric, "cls": cls,
                    "measured": r.value, "predicted": res.predicted, "ratio": res.predicted / r.value,
                    "fam": f"{fam.model} {fam.weights} {fam.device}" if fam else "", **bd,
                }
                out.append(rec)
                if fam:
                    by_group[f"{fam.model} {fam.weights}|{cls}"].append(res.ape)
                    by_group[f"{fam.model} {fam.device}|{cls}"].append(res.ape)
                    by_group[f"{fam.model}|{cls}"].append(res.ape)
                    by_group[f"{r.source}|{cls}"].append(res.ape)
    for k in sorted(by_group):
        v = by_group[k]
        print(f"{k:40s} n={len(v):4d} median={statistics.median(v):.3f}")
    if a.worst:
        print_worst(out, a.worst)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=0, default=str)
    return 0


if __name__ == "__main__":
    from tokometer.errors import InputError

    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as exc:  # an unknown publication or family word: the message names the known ones
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
