"""Leave-one-source-out prefill (and decode) on the AMD and Intel GPU rows only (issue 25 diagnosis): each
row predicted by a fit without its publication, printed with its backend, quant, build, prompt length, the
peak the estimate used, and the fitted eta_max and T_half that apply.

    PYTHONPATH=src python scripts/amd_intel_lso.py [--rows] [--vendors amd,intel] [--metric pp] [--sources A,B]

`--sources`: those publications' rows instead (any device kind).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from dataclasses import replace

from tokometer.errors import TokometerError
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import case_source
from tokometer.fitting.model import held_out_fits
from tokometer.fitting.rows import Case
from tokometer.fitting.validation import case_efficiency, case_request, resolve_case_hardware
from tokometer.usecases.estimate import estimate


def _arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def wanted(case: Case, vendors: set[str], metrics: set[str], sources: set[str]) -> bool:
    if case.n_devices != 1 or case.metric not in metrics:
        return False
    if sources:
        return case_source(case) in sources
    try:
        hw = resolve_case_hardware(case)
    except TokometerError:
        return False
    return hw.vendor in vendors and hw.kind == "gpu"


def main() -> None:
    vendors = set(_arg("--vendors", "amd,intel").split(","))
    metrics = set(_arg("--metric", "pp,tg").split(","))
    cases = read_evidence()
    sources = set(filter(None, _arg("--sources", "").split(",")))
    only = [c for c in cases if wanted(c, vendors, metrics, sources)]
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    lines: list[str] = []
    for model, pairs in held_out_fits(cases, case_source, only=only):
        for case, r in pairs:
            if not (r.scored and r.predicted):
                continue
            err = r.predicted / case.value - 1.0
            by[(case_source(case), case.metric)].append(err)
            if "--rows" not in sys.argv or case.metric != "pp":
                continue
            hw = resolve_case_hardware(case)
            request = case_request(case, hw)
            backend = request.backend or hw.backend
            eff = case_efficiency(case, hw, entries=model.table, meta=model.meta)
            est = estimate(replace(request, efficiency=eff))
            q = est.quantized and est.peak.dtype != "fp32-vector"
            lines.append(
                f"{case.row_id:20s} {hw.id[:22]:22s} {backend[:7]:7s} {case.text('quant')[:9]:9s} "
                f"{case.text('engine_version')[:10]:10s} {case.text('model')[:24]:24s} T={case.prompt_tokens:5d} "
                f"peak={est.peak.tflops or 0:6.1f}{est.peak.dtype or '':5s} q={int(q)} eta={eff.prefill_max_for(q):.2f} "
                f"Th={eff.prefill_half_tokens:5.0f} meas={case.value:8.1f} pred={r.predicted:8.1f} err={err:+.0%} "
                f"{r.group}"
            )
    for line in sorted(lines):
        print(line)
    for key in sorted(by):
        e = by[key]
        ape = sorted(abs(x) for x in e)
        print(f"{key[0]:18s} {key[1]} n={len(e):4d} bias={statistics.median(e):+.0%} ape={statistics.median(ape):.1%} "
              f"p90={ape[min(len(ape) - 1, int(0.9 * len(ape)))]:.0%}")
    for m in sorted(metrics):
        e = sorted(abs(x) for k, v in by.items() if k[1] == m for x in v)
        if e:
            print(f"ALL {m} n={len(e)} ape={statistics.median(e):.1%} p90={e[int(0.9 * (len(e) - 1))]:.1%}")


if __name__ == "__main__":
    main()
