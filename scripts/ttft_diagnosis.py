"""Dump every published TTFT row with what its simulated TTFT is made of, and group the misses.

Issue 29 (MoE serving TTFT): the compiled 2025-26 rows (`calibration_data/serving_published/`) are
simulated with the shipped serving fit, as `scripts/serving_accuracy.py` does (every source held
out), and each scored TTFT row (mean or median) is printed with its source, engine, image, device,
layout (TP/EP/DP, disaggregated pools), clients, lengths, measured and predicted TTFT, and the
simulated TTFT's parts:

- `queue`: mean time from arrival to admission (waiting behind other prompts, and SGLang's
  `--scheduler-recv-interval` wait, `recv`, the interval the run was simulated with);
- `lone`: one prompt's prefill step alone, `max(roofline + fixed, eager floor)`, and `eager`: the
  eager-prefill host floor of that step (`StepCost.eager_prefill_s`; 0 when not charged);
- the rest of the mean TTFT (prefill steps shared with other prompts, chunks, the decode step a
  prompt waits behind) is `ttft - queue`.

Then the misses are grouped by sign (`ratio` = predicted / measured), engine, device family,
concurrency band and aggregated/disaggregated.

    PYTHONPATH=src python scripts/ttft_diagnosis.py [--source IX-DSR1-API] [--rows] [--json out.json]

`--source` names publications as `tokometer validate --serving --only` does (`fitting/serving_select.py`,
case-insensitive; an unknown one stops with the known list); that command gives the held-out error alone.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from typing import Any


def _band(clients: float | None) -> str:
    if not clients:
        return "rate/offline"
    for hi, name in ((1, "1"), (8, "2-8"), (32, "9-32"), (128, "33-128")):
        if clients <= hi:
            return name
    return ">128"


def diagnose(sources: list[str] | None = None) -> list[dict[str, Any]]:
    """One dict per scored TTFT row (mean/median) of the compiled serving files."""
    from tokometer.catalog.serving import serving_efficiency
    from tokometer.errors import TokometerError
    from tokometer.fitting.serving_families import family, metric_class, published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows
    from tokometer.fitting.serving_select import resolve_sources
    from tokometer.fitting.serving_validate import deploy_run, read_metric, simulate_run
    from tokometer.fitting.time_limit import TimeLimitError

    wanted = set(resolve_sources(sources or (), [p.stem for p in published_paths()]))  # as validate --serving --only
    out: list[dict[str, Any]] = []
    for path in published_paths():
        if wanted and path.stem not in wanted:
            continue
        rows, _ = read_rows(path)
        for run in group_runs(rows):
            ttft_rows = [r for r in run.rows if metric_class(r.metric) == "ttft"]
            if not ttft_rows or run.reason is not None:
                continue
            try:
                result = simulate_run(run, serving_efficiency, time_limit_s=60.0)
                dep = deploy_run(run, serving_efficiency(run.engine))
            except (TokometerError, TimeLimitError) as exc:  # a diagnosis dump: keep going, say why
                print(f"# {ttft_rows[0].row_id}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            if not result.completed:
                continue
            wl = run.workload
            assert wl is not None
            p = wl.prompt.mean
            cost = dep.cost
            lone = cost.time_s(p, 0.0, p * p / 2, 1.0, prefill_tokens=p)
            fam = family(run)
            r0 = run.rows[0]
            image = re.search(r"image=([^;, ]+)", r0.text("notes"))
            for row in ttft_rows:
                value, why = read_metric(result, row, run)
                if value is None or why:
                    continue
                out.append({
                    "row": row.row_id, "source": row.source, "engine": run.engine,
                    "image": (image.group(1) if image else r0.text("engine_version")),
                    "hw": r0.text("hardware_id"), "family": fam.device if fam else "?", "moe": bool(fam and fam.model == "MoE"),
                    "model": r0.text("model"), "quant": r0.text("quant"),
                    "layout": r0.text("parallelism")[:60], "disagg": run.disagg is not None,
                    "spec": "speculative_decoding" in r0.text("flag").lower(),
                    "clients": r0.positive("concurrency") if r0.scenario == "online-concurrency" else None,
                    "scenario": r0.scenario, "prompt": p, "output": wl.output.mean, "metric": row.metric,
                    "measured": row.value, "predicted": value, "ratio": value / row.value,
                    "queue_ms": (result.queue_s.mean or 0.0) * 1e3, "ttft_mean_ms": (result.ttft_s.mean or 0.0) * 1e3,
                    "lone_ms": lone * 1e3, "eager_ms": cost.eager_prefill_s * 1e3, "recv": run.recv_interval,
                })
    return out


def _group(rows: list[dict[str, Any]], key: str) -> None:
    groups: dict[Any, list[float]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r["ratio"])
    print(f"\nby {key}: n, median pred/meas, median APE, share too fast (<0.8), too slow (>1.25)")
    for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        ape = statistics.median(abs(x - 1) for x in v)
        print(f"  {str(k):>24} {len(v):5d}  {statistics.median(v):6.2f}  {ape:6.1%}  "
              f"{sum(x < 0.8 for x in v) / len(v):5.0%}  {sum(x > 1.25 for x in v) / len(v):5.0%}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", action="append", help="only these sources (file stems); repeatable")
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--json", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = diagnose(args.source)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if args.rows:
        print("source engine image hw layout disagg spec clients prompt/output metric measured predicted ratio "
              "| queue_ms ttft_mean_ms lone_ms eager_ms recv")
        for r in sorted(rows, key=lambda r: (r["source"], r["engine"], r["hw"], r["clients"] or 0)):
            print(f"{r['source']} {r['engine']} {r['image']} {r['hw']} [{r['layout']}] {'D' if r['disagg'] else 'A'} "
                  f"{'S' if r['spec'] else '-'} c={r['clients']} {r['prompt']:.0f}/{r['output']:.0f} {r['metric']} "
                  f"{r['measured']:.4g} {r['predicted']:.4g} {r['ratio']:.2f} | {r['queue_ms']:.1f} "
                  f"{r['ttft_mean_ms']:.1f} {r['lone_ms']:.1f} {r['eager_ms']:.1f} {r['recv']}")
    moe = [r for r in rows if r["moe"]]
    print(f"\n{len(rows)} TTFT rows, {len(moe)} MoE"
          + (f"; MoE median APE {statistics.median(abs(r['ratio'] - 1) for r in moe):.1%}" if moe else ""))
    scope = moe or rows  # the groups below: the MoE rows (all rows when there is none)
    if not scope:
        return 0
    for r in scope:
        r["band"] = _band(r["clients"])
        r["eng_fam"] = f"{r['engine']}/{r['family']}/{'D' if r['disagg'] else 'A'}"
    for key in ("source", "engine", "family", "disagg", "spec", "band", "eng_fam"):
        _group(scope, key)
    return 0


if __name__ == "__main__":
    from tokometer.errors import InputError

    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as exc:  # an unknown publication or family word: the message names the known ones
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
