"""Held-out single-device errors of a `tokometer validate --lso --json` run, grouped by any row fields.

Issue 25: the per-publication decode biases are the bulk of the held-out error, and the question each
candidate term asks is which rows share a bias (a build range, a backend, a device). This groups the
scored single-device rows of one metric by the evidence columns named (any `published/*.csv` column, plus
`build`: the llama.cpp build a row states, `validation.engine_build`, in buckets of 500) and prints, per
group, the figures `lso_compare.figures` prints for a publication (count, median and p90 absolute error, median
signed error, band coverage).

    PYTHONPATH=src python scripts/lso_by.py LSO.json [--metric tg] [--by source_id,engine,backend,build]
        [--min-rows 3]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from typing import Any

from lso_compare import figures  # scripts/ is the script's own directory, first on sys.path

BUILD_BUCKET = 500


def key_of(case: Any, fields: list[str]) -> tuple[str, ...]:
    """The group a row falls in: each named column's text, `build` as its 500-build bucket ("-" unstated)."""
    from tokometer.fitting.validation import engine_build

    parts = []
    for name in fields:
        if name == "build":
            build = engine_build(case)
            parts.append(f"b{build // BUILD_BUCKET * BUILD_BUCKET}" if build is not None else "-")
        else:
            parts.append(case.text(name) or "-")
    return tuple(parts)


def grouped(report: dict[str, Any], metric: str, fields: list[str]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """The scored single-device rows of `metric` in `report`, by `key_of`."""
    from tokometer.fitting.evidence import read_evidence

    cases = {c.row_id: c for c in read_evidence()}
    out: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in report["rows"]:
        case = cases.get(row["row_id"])
        if not row.get("scored") or case is None or case.n_devices != 1 or row["metric"] != metric:
            continue
        out[key_of(case, fields)].append(row)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", help="the JSON of `tokometer validate --lso --json`")
    ap.add_argument("--metric", default="tg", choices=("tg", "pp"))
    ap.add_argument("--by", default="source_id", help="comma-separated evidence columns, or build")
    ap.add_argument("--min-rows", type=int, default=1)
    args = ap.parse_args(argv)
    with open(args.report, encoding="utf-8") as fh:
        report = json.load(fh)
    groups = grouped(report, args.metric, [f.strip() for f in args.by.split(",") if f.strip()])
    for key, rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        if len(rows) >= args.min_rows:
            print(f"{' | '.join(key)[:100]:100s} {figures(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
