"""Compare two `tokometer validate --lso --json` reports: single-device decode/prefill median, p90 and
band coverage overall and per source (issue 25 before -> after figures).

    PYTHONPATH=src python scripts/lso_compare.py before.json after.json [SOURCE ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from typing import Any

from tokometer.fitting.evidence import read_evidence


def figures(rows: list[dict[str, Any]]) -> str:
    errs = [(r["predicted"] / r["measured"] - 1.0) for r in rows]
    ape = sorted(abs(e) for e in errs)
    band = [r["interval"] is not None and r["interval"][0] <= r["measured"] <= r["interval"][1] for r in rows]
    p90 = ape[min(len(ape) - 1, int(0.9 * len(ape)))]
    return (f"n={len(rows):4d} med={statistics.median(ape):6.1%} p90={p90:7.1%} "
            f"bias={statistics.median(errs):+6.1%} band={sum(band) / len(rows):5.1%}")


def load(path: str, single: set[str], source: dict[str, str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    rep = json.load(open(path))
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rep["rows"]:
        if not r["scored"] or r["row_id"] not in single or r["metric"] not in ("tg", "pp"):
            continue
        out[("ALL", r["metric"])].append(r)
        out[(source[r["row_id"]], r["metric"])].append(r)
    print(path, {k: v for k, v in rep["subsets"].items() if k.endswith("single_device")})
    return out


def main() -> None:
    cases = read_evidence()
    single = {c.row_id for c in cases if c.n_devices == 1}
    source = {c.row_id: c.text("source_id") for c in cases}
    before, after = (load(p, single, source) for p in sys.argv[1:3])
    wanted = sys.argv[3:] or sorted({k[0] for k in before})
    for src in ["ALL", *wanted]:
        for m in ("tg", "pp"):
            if (src, m) in before or (src, m) in after:
                b = figures(before[(src, m)]) if before.get((src, m)) else "-"
                a = figures(after[(src, m)]) if after.get((src, m)) else "-"
                print(f"{src:18s} {m}  {b}  ->  {a}")


if __name__ == "__main__":
    main()
