"""Leave-one-source-out on the Intel Arc rows only (issue 25 diagnosis): each Intel row predicted by a
fit without its publication, printed with its group, backend, quant, build, peak and bound.

    PYTHONPATH=src python scripts/intel_lso.py [--all-rows]
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from tokometer.errors import TokometerError
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import case_group
from tokometer.fitting.model import leave_one_source_out
from tokometer.fitting.validation import resolve_case_hardware


def is_intel(case) -> bool:  # type: ignore[no-untyped-def]
    try:
        hw = resolve_case_hardware(case)
    except TokometerError:
        return False
    return hw.vendor == "intel" and hw.kind == "gpu"


def main() -> None:
    cases = read_evidence()
    intel = [c for c in cases if is_intel(c) and c.n_devices == 1 and c.metric in ("tg", "pp")]
    results = leave_one_source_out(cases, only=intel)
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    cover: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in results:
        c = r.case
        key = (c.text("source_id"), c.metric)
        if r.scored and r.predicted:
            err = r.predicted / c.value - 1.0
            by[key].append(err)
            cover[key].append(r.low is not None and r.high is not None and r.low <= c.value <= r.high)
            if "--all-rows" in sys.argv:
                print(f"{c.row_id:22s} {c.metric} {c.text('backend')[:10]:10s} {c.text('quant')[:10]:10s} "
                      f"{c.text('engine_version')[:14]:14s} {c.text('model')[:30]:30s} pp={c.prompt_tokens} "
                      f"meas={c.value:9.2f} pred={r.predicted:9.2f} err={err:+.0%} {case_group(c)} {r.details.get('bound')}")
    for key in sorted(by):
        e = by[key]
        ape = sorted(abs(x) for x in e)
        p90 = ape[min(len(ape) - 1, int(0.9 * len(ape)))]
        print(f"{key[0]:16s} {key[1]} n={len(e):4d} bias={statistics.median(e):+.0%} ape={statistics.median(ape):.0%} "
              f"p90={p90:.0%} band={sum(cover[key]) / len(e):.0%}")
    for m in ("tg", "pp"):
        e = sorted(abs(x) for k, v in by.items() if k[1] == m for x in v)
        if e:
            print(f"ALL intel {m} n={len(e)} ape={statistics.median(e):.1%} p90={e[int(0.9 * len(e))]:.1%}")


if __name__ == "__main__":
    main()
