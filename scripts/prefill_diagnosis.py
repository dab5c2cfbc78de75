"""Dump every single-device prefill row of some publications with its held-out prediction and what
that prediction is made of (issue 25: the prefill tail under leave-one-source-out).

Each named source is held out as `tokometer validate --lso` holds it out: the efficiency table is
fitted on every other source's rows, then each of the source's `pp` rows is estimated with it, and
printed with its device, engine/backend/build, model/quant, prompt length, batch, measured and
predicted tok/s, and the prefill terms (`roofline.prefill`): matmul FLOPs, the peak used (dtype,
derived or not), eta_max and T_half, compute / memory / fixed-overhead seconds.

    PYTHONPATH=src python scripts/prefill_diagnosis.py MLXCEL-GB10 [MLXCEL-M1ULTRA ...] [--summary]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any


def diagnose(sources: list[str]) -> list[dict[str, Any]]:
    from tokometer.catalog import engine_catalog
    from tokometer.errors import TokometerError
    from tokometer.fitting.calibration import fit_with_bands
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.features import case_source, features
    from tokometer.fitting.validation import case_efficiency, case_request, resolve_case_hardware
    from tokometer.usecases.estimate import estimate

    cases = read_evidence()
    feats = {id(c): features(c) for c in cases}
    out: list[dict[str, Any]] = []
    for source in sources:
        train = [f for c in cases if case_source(c) != source and (f := feats[id(c)]) is not None]
        meta: dict[str, Any] = {}
        table = fit_with_bands(train, source=f"fit without {source}", meta=meta)
        for case in cases:
            if case_source(case) != source or case.metric != "pp" or case.n_devices != 1:
                continue
            row: dict[str, Any] = {
                "row_id": case.row_id, "hardware": case.text("hardware_id") or case.text("hardware_as_stated"),
                "engine": case.text("engine"), "build": case.text("engine_version"), "backend": case.text("backend"),
                "model": case.text("model"), "quant": case.text("quant"), "prompt": case.prompt_tokens,
                "batch": case.batch, "measured": case.value, "flag": case.flag,
            }
            try:
                hw = resolve_case_hardware(case)
                request = case_request(case, hw)
                engine = engine_catalog().get(request.engine or "llama-cpp")
                backend = request.backend or hw.backend
                eff = case_efficiency(case, hw, entries=table, meta=meta)
                est = estimate(case_request(case, hw, efficiency=eff))
            except TokometerError as exc:
                row["error"] = str(exc)
                out.append(row)
                continue
            pf = est.prefill
            row.update(
                device=hw.id, engine_id=engine.id, backend_id=backend, quantized=est.quantized,
                peak_tflops=est.peak.tflops, peak_dtype=est.peak.dtype, peak_derived=est.peak.derived,
                eta_max=eff.prefill_max_for(est.quantized), t_half=eff.prefill_half_tokens,
                tau_step_us=eff.step_overhead_us, tau_layer_us=eff.layer_overhead_us, n_layers=est.model.n_layers,
                active_b=est.model.matmul_params_per_token() / 1e9,
            )
            if pf is not None:
                row.update(
                    predicted=pf.tok_s, matmul_tflop=pf.matmul_flops / 1e12, attention_tflop=pf.attention_flops / 1e12,
                    compute_ms=pf.compute_time_s * 1e3, memory_ms=pf.memory_time_s * 1e3,
                    overhead_ms=pf.overhead_time_s * 1e3, measured_ms=case.prompt_tokens / case.value * 1e3,
                    ratio=pf.tok_s / case.value,
                )
            out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--summary", action="store_true", help="one line per source only")
    args = ap.parse_args()
    rows = diagnose(args.sources)
    for src in args.sources:
        mine = [r for r in rows if r["row_id"].startswith(src) or src in r["row_id"]]
        scored = [r for r in mine if "ratio" in r]
        if not args.summary:
            for r in mine:
                if "ratio" not in r:
                    print(f"{r['row_id']:24s} not predicted: {r.get('error', r.get('flag') or '?')}")
                    continue
                print(
                    f"{r['row_id']:24s} {r['device']:16s} {r['engine_id']:10s} {r['backend_id']:7s} "
                    f"{r['model'][:34]:34s} {r['quant'][:10]:10s} T={r['prompt']:6d} "
                    f"meas={r['measured']:8.1f} pred={r['predicted']:8.1f} x{r['ratio']:5.2f} | "
                    f"P={r['active_b']:5.2f}B peak={r['peak_tflops']:6.1f}{'*' if r['peak_derived'] else ''} {r['peak_dtype']} "
                    f"eta={r['eta_max']:.2f} Th={r['t_half']:5.0f} comp={r['compute_ms']:8.2f} mem={r['memory_ms']:7.2f} "
                    f"ovh={r['overhead_ms']:6.2f} meas_ms={r['measured_ms']:8.2f}"
                )
        if scored:
            ratios = [r["ratio"] for r in scored]
            print(f"== {src}: n={len(scored)} median ratio {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
