"""How much of the published single-stream evidence can be scored, and why the rest cannot.

Runs every row of `calibration_data/published/*.csv` through the same resolution and prediction as
`tokometer validate` (`fitting.validation.predict_case`, the shipped table) and counts the rows that
come back unscored, by reason (the reason text with its row-specific names folded into a category)
and per source. It reads the files only; it changes nothing.

    python scripts/evidence_coverage.py            # a table: per source, then the top reasons
    python scripts/evidence_coverage.py --json     # the same counts as JSON
    python scripts/evidence_coverage.py --examples 3   # also a few as-stated cells per reason
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tokometer.calibration_data import PUBLISHED_DIR
from tokometer.fitting import rows, validation

# reason text -> category: the first pattern that matches names the category
CATEGORIES = (
    (r"^model .* is not in the catalog", "model not in the catalog (no total_params_b)"),
    (r"^engine .* is not in the engine catalog", "engine not in the catalog"),
    (r"^unknown quantization", "quant unknown (no bits_per_weight)"),
    (r"unknown hardware|not in the hardware catalog|^no hardware", "hardware unknown"),
    (r"^flagged in source data", "flagged in the source"),
    (r"no compute peak", "no compute peak (prefill/TTFT)"),
    (r"^metric .* is not scored", "metric not scored"),
    (r"served workload|without a batch_size", "serving / batch not stated"),
    (r"does not fit|out of memory|exceeds", "does not fit in memory"),
    (r"x the physical ceiling", "measured above the physical ceiling (row flagged impossible)"),
    (r"spilled to system memory", "LocalScore run whose model overflowed the GPU"),
)


def category(reason: str) -> str:
    for pattern, name in CATEGORIES:
        if re.search(pattern, reason, re.IGNORECASE):
            return name
    return re.sub(r"'[^']*'", "'…'", reason)[:90]


def as_stated(result: validation.CaseResult, cat: str) -> str:
    """The row cell the category is about, for --examples."""
    case = result.case
    column = {
        "model not in the catalog (no total_params_b)": "model",
        "engine not in the catalog": "engine",
        "quant unknown (no bits_per_weight)": "quant",
        "hardware unknown": "hardware_as_stated",
    }.get(cat)
    if column is None:
        return result.reason or ""
    return case.text(column) or case.text("hardware_id")


def coverage(files: list[Path]) -> dict[str, Any]:
    per_source: dict[str, Counter[str]] = defaultdict(Counter)
    reasons: Counter[str] = Counter()
    reason_sources: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, Counter[str]] = defaultdict(Counter)
    for path in files:
        for case in rows.read_cases(path):
            source = case.text("source_id") or path.stem
            result = validation.predict_case(case)
            per_source[source]["rows"] += 1
            if result.scored:
                per_source[source]["scored"] += 1
                continue
            cat = category(result.reason or "?")
            reasons[cat] += 1
            reason_sources[cat][source] += 1
            examples[cat][as_stated(result, cat)] += 1
    total = sum(c["rows"] for c in per_source.values())
    scored = sum(c["scored"] for c in per_source.values())
    return {
        "rows": total,
        "scored": scored,
        "sources": {s: {"rows": c["rows"], "scored": c["scored"]} for s, c in sorted(per_source.items())},
        "reasons": {
            r: {"rows": n, "sources": dict(reason_sources[r].most_common()), "examples": dict(examples[r].most_common(12))}
            for r, n in reasons.most_common()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--examples", type=int, default=0, help="as-stated cells shown per reason")
    parser.add_argument("files", nargs="*", type=Path, help="CSV files (default: every published/*.csv)")
    args = parser.parse_args(argv)
    files = args.files or sorted(PUBLISHED_DIR.glob("*.csv"))
    if not files:
        print("no published evidence files", file=sys.stderr)
        return 2
    result = coverage(files)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{'source':<22} {'rows':>6} {'scored':>7} {'share':>6}")
    for source, c in result["sources"].items():
        print(f"{source:<22} {c['rows']:>6} {c['scored']:>7} {c['scored'] / c['rows']:>6.0%}")
    rows, scored = result["rows"], result["scored"]
    print(f"{'all':<22} {rows:>6} {scored:>7} {scored / rows:>6.0%}\n")
    print(f"{'unscored rows':>6}  reason (top sources)")
    for reason, info in result["reasons"].items():
        top = ", ".join(f"{s} {n}" for s, n in list(info["sources"].items())[:4])
        print(f"{info['rows']:>6}  {reason}  ({top})")
        for cell, n in list(info["examples"].items())[: args.examples]:
            print(f"{'':>10}{n:>5}  {cell[:110]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
