"""Score `tokometer estimate`'s TTFT against the compiled published serving rows at few clients.

The single-device fit never reads serving rows, and the serving-stack priors the estimate's TTFT carries
(`usecases.estimate.serving_stack`) come from sources outside them, so every row here is held out. A row
counts when its run is aggregated (no disaggregation), closed-loop at 1 to `--max-clients` clients, and
laid out without expert or attention-data parallelism (the estimate's layouts are TP/PP). Prints the
median absolute error and the median predicted / measured, for MoE and dense models and per source and
engine; `--json PATH` writes every row.

    python scripts/estimate_ttft_check.py [--max-clients 4] [--json rows.json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tokometer.errors import TokometerError  # noqa: E402
from tokometer.fitting.serving_runs import METRIC, UNIT_S, group_runs, read_rows  # noqa: E402
from tokometer.usecases.estimate import estimate  # noqa: E402
from tokometer.usecases.request import EstimateRequest  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "src" / "tokometer" / "calibration_data" / "serving_published"
FIELDS = {f.name for f in dataclasses.fields(EstimateRequest)}


def rows(max_clients: int) -> list[dict]:
    out = []
    for path in sorted(DATA.glob("*.csv")):
        parsed, _ = read_rows(path)
        for run in group_runs(parsed):
            w = run.workload
            if run.reason or w is None or run.disagg or w.arrival != "closed" or not 1 <= w.concurrency <= max_clients:
                continue
            kw = dict(run.deploy_kwargs)
            model, hw = kw.pop("model"), kw.pop("hw")
            if any(kw.get(k, 1) > 1 for k in ("ep", "dp", "nodes")):
                continue
            kw = {k: v for k, v in kw.items() if k in FIELDS}
            for row in run.rows:
                m = METRIC.match(row.metric)
                if m is None or m.group(1) != "ttft":
                    continue
                unit = m.group(2) or row.text("unit").lower()  # as serving_validate.read_metric reads it
                try:
                    est = estimate(model, hw, prompt_tokens=int(round(w.prompt.mean)), **kw)
                except TokometerError as exc:
                    print(f"not scored: {row.source} {row.metric}: {exc}", file=sys.stderr)
                    continue
                if est.ttft_s is None:
                    continue
                measured = row.value * UNIT_S.get(unit, UNIT_S[None])
                out.append({
                    "source": row.source, "engine": str(kw.get("engine")), "clients": w.concurrency,
                    "model": est.model.name, "hardware": est.hardware.id, "tp": kw.get("tp", 1),
                    "prompt_tokens": w.prompt.mean, "metric": row.metric, "measured_s": measured,
                    "predicted_s": est.ttft_s, "moe": est.model.is_moe,
                })
    return out


def summary(scored: list[dict]) -> list[str]:
    lines = []
    groups: dict[tuple, list[float]] = collections.defaultdict(list)
    for r in scored:
        ratio = r["predicted_s"] / r["measured_s"]
        groups[("MoE" if r["moe"] else "dense", "all", "")].append(ratio)
        groups[("MoE" if r["moe"] else "dense", r["source"], r["engine"])].append(ratio)
    for (kind, source, engine), ratios in sorted(groups.items()):
        ape = statistics.median(abs(x - 1) for x in ratios)
        lines.append(f"{kind:5s} {source:14s} {engine:13s} rows {len(ratios):4d}  median APE {ape:6.1%}  predicted/measured {statistics.median(ratios):.2f}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-clients", type=int, default=4)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    scored = rows(args.max_clients)
    print("\n".join(summary(scored)))
    if args.json:
        args.json.write_text(json.dumps(scored, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
