"""Score the LocalScore suite rows held out (leave-one-source-out) per hardware family and metric.

Why: LOCALSCORE is scored as suite aggregates (fitting/suites.py) and never fitted, so its held-out
figures come from one fit on every other source; this prints them per family for tg, pp and ttft_ms
(median and p90 absolute error, median signed error, 80 % band coverage) and why rows stay unscored.
Usage: PYTHONPATH=src python scripts/localscore_lso.py [--shipped] [--json PATH]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import statistics

from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.families import FAMILIES, hardware_family
from tokometer.fitting.model import leave_one_source_out
from tokometer.fitting.rows import CaseResult
from tokometer.fitting.validation import predict_case


def _summary(results: list[CaseResult]) -> dict[str, float | int | None]:
    scored = [r for r in results if r.scored and r.predicted]
    apes = sorted(r.ape for r in scored if r.ape is not None)
    logs = [math.log(r.predicted / r.case.value) for r in scored if r.predicted]
    inside = [r.low is not None and r.high is not None and r.low <= r.case.value <= r.high for r in scored]
    return {
        "n": len(scored),
        "median_ape": statistics.median(apes) if apes else None,
        "p90_ape": apes[min(len(apes) - 1, int(0.9 * len(apes)))] if apes else None,
        "median_signed": math.expm1(statistics.median(logs)) if logs else None,
        "band_coverage": sum(inside) / len(inside) if inside else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shipped", action="store_true", help="the shipped table instead of leave-one-source-out")
    parser.add_argument("--json", help="also write the per-family summary here")
    args = parser.parse_args()
    cases = read_evidence()
    mine = [c for c in cases if c.text("source_id") == "LOCALSCORE"]
    results = [predict_case(c) for c in mine] if args.shipped else leave_one_source_out(cases, only=mine)
    out: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for family in ("all", *FAMILIES):
        rows = [r for r in results if family == "all" or hardware_family(r.hardware_id) == family]
        out[family] = {m: _summary([r for r in rows if r.case.metric == m]) for m in ("tg", "pp", "ttft_ms")}
    for family, metrics in out.items():
        for metric, s in metrics.items():
            if s["n"]:
                print(f"{family:20s} {metric:8s} n={s['n']:4d} median {s['median_ape']:.3f} p90 {s['p90_ape']:.3f} "
                      f"bias {s['median_signed']:+.3f} band {s['band_coverage']:.2f}")
    reasons = collections.Counter((r.reason or "")[:70] for r in results if not r.scored)
    print(f"scored {sum(r.scored for r in results)} of {len(results)}; unscored reasons:")
    for reason, n in reasons.most_common(15):
        print(f"  {n:5d}  {reason}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"families": out, "unscored": dict(reasons), "rows": [r.to_dict() for r in results]}, fh, indent=1)


if __name__ == "__main__":
    main()
