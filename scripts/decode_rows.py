"""Leave-one-source-out decode rows of chosen publications, each with the parts of its prediction
(issue 25, the per-source decode biases): device, engine/backend/build, model/quant/bits, depth,
measured against held-out predicted, and the step's terms (weight bytes, stream share b_unit gives,
eta_bw, memory/overhead time, per-layer and per-step costs, host sampling), then the misses grouped.

    PYTHONPATH=src python scripts/decode_rows.py --sources LOCALSCORE,ASLB-M3MAX [--rows] [--by model,hw]
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from dataclasses import replace

from tokometer.catalog import engine_catalog
from tokometer.errors import TokometerError
from tokometer.fitting.evidence import read_evidence
from tokometer.fitting.features import case_source
from tokometer.fitting.model import held_out_fits
from tokometer.fitting.validation import case_efficiency, case_request, resolve_case_hardware
from tokometer.usecases.estimate import estimate


def _arg(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def _summary(label: str, errs: list[float]) -> str:
    ape = sorted(abs(x) for x in errs)
    return (f"{label:48s} n={len(errs):4d} bias={statistics.median(errs):+.0%} ape={statistics.median(ape):.1%} "
            f"p90={ape[min(len(ape) - 1, int(0.9 * len(ape)))]:.0%}")


def main() -> None:
    sources = set(filter(None, _arg("--sources", "LOCALSCORE").split(",")))
    metric = _arg("--metric", "tg")
    keys = _arg("--by", "hw,model,quant,engine").split(",")
    cases = read_evidence()
    wanted = [c for c in cases if c.n_devices == 1 and c.metric == metric and case_source(c) in sources]
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    lines: list[str] = []
    for model, pairs in held_out_fits(cases, case_source, only=wanted):
        for case, r in pairs:
            if not (r.scored and r.predicted):
                continue
            err = r.predicted / case.value - 1.0
            try:
                hw = resolve_case_hardware(case)
                request = case_request(case, hw)
                engine = engine_catalog().get(request.engine or "llama-cpp")
                backend = request.backend or hw.backend
                eff = case_efficiency(case, hw, entries=model.table, meta=model.meta)
                est = estimate(replace(request, efficiency=eff))
            except TokometerError as exc:
                print(f"{case.row_id}: {exc}")
                continue
            s = est.step
            hwe = eff.for_hardware(hw)
            parts = {
                "hw": hw.id, "model": case.text("model")[:28], "quant": case.text("quant"),
                "engine": f"{engine.id}/{backend}", "build": case.text("engine_version")[:12],
                "src": case_source(case),
            }
            for k in keys:
                groups[(k, parts[k])].append(err)
            lines.append(
                f"{case.row_id:18s} {hw.id[:20]:20s} {engine.id[:10]:10s} {backend[:6]:6s} {parts['build']:12s} "
                f"{parts['model']:28s} {parts['quant'][:8]:8s} d={s.depth_tokens:7.0f} "
                f"W={s.weight_bytes / 1e9:6.2f}GB BW={hw.memory_bandwidth_gb_per_s:6.0f} share={hwe.applied_stream_share:.2f} "
                f"eta={hwe.bandwidth_fraction_for(est.quantized):.2f} mem={s.memory_time_s * 1e3:6.2f} "
                f"ovh={s.overhead_time_s * 1e3:5.2f}ms tl={eff.layer_overhead_us:5.1f} ts={eff.step_overhead_us:6.1f} "
                f"samp={eff.host_sampling_ns_per_vocab:.2f} meas={case.value:7.1f} pred={r.predicted:7.1f} err={err:+.0%} {r.group}"
            )
    if "--rows" in sys.argv:
        for line in sorted(lines, key=lambda x: x.split("err=")[1]):
            print(line)
    for key in sorted(groups, key=lambda k: (k[0], -len(groups[k]))):
        if len(groups[key]) >= 3:
            print(_summary(f"{key[0]}={key[1]}", groups[key]))


if __name__ == "__main__":
    main()
