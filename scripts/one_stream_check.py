"""One stream, two step models: `estimate` (the single-stream decode step, docs/PHYSICS.md section 4) against
`simulate` (the serving step, section 6) on every published serving run with one client in flight.

Each run of `calibration_data/serving_published/*.csv` whose rows all say concurrency 1 (no disaggregated pools, no
speculation) and that reports a mean or median TPOT is predicted twice: by the serving simulator, exactly as
`tokometer validate --serving` predicts it (`serving_validate.predict`), and by `usecases.estimate` for the same
model, device, format, engine and parallel layout at the run's mean depth (prompt + half the output). Neither fit
saw these rows: the serving table is fitted on offline and static-batch runs, and the single-stream table has no
rows of these engines on these devices. Prints one line per run and the median absolute error of each.

    PYTHONPATH=src python scripts/one_stream_check.py [--json]
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any

from tokometer.catalog.serving import serving_efficiency
from tokometer.errors import InputError
from tokometer.fitting.serving_families import published_paths
from tokometer.fitting.serving_runs import Run, group_runs, read_rows
from tokometer.fitting.serving_validate import predict
from tokometer.usecases.estimate import estimate

TPOT_METRICS = {"tpot_s_p50": 1.0, "tpot_s_mean": 1.0, "tpot_ms_p50": 1e-3, "tpot_ms_mean": 1e-3}
LAYOUT_KEYS = ("tp", "pp", "ep", "dp", "nodes")


def one_client_runs() -> list[Run]:
    """The published runs with one request in flight, no disaggregated pools and no speculation."""
    runs = []
    for path in published_paths():
        rows, _ = read_rows(path)
        for run in group_runs(rows):
            if run.reason or run.disagg or run.tokens_per_pass != 1 or run.workload is None:
                continue
            if all(r.text("concurrency") == "1" for r in run.rows) and any(
                r.metric in TPOT_METRICS for r in run.rows
            ):
                runs.append(run)
    return runs


def estimate_tpot_s(run: Run) -> float | None:
    """The single-stream estimate's seconds per token for the run's setup at its mean depth."""
    kw = run.deploy_kwargs
    assert run.workload is not None
    depth = run.workload.prompt.mean + run.workload.output.mean / 2
    layout = {k: kw[k] for k in LAYOUT_KEYS if k in kw}
    try:
        est = estimate(
            kw["model"],
            kw["hw"],
            quant=kw.get("quant"),
            engine=kw.get("engine"),
            context_tokens=int(depth),
            **layout,
        )
    except InputError:
        return None
    return 1.0 / est.estimate_tok_s if est.estimate_tok_s else None


def check() -> list[dict[str, Any]]:
    out = []
    for run in one_client_runs():
        est = estimate_tpot_s(run)
        for res in predict([run], serving_efficiency, naive=False):
            scale = TPOT_METRICS.get(res.row.metric)
            if scale is None or res.reason is not None or res.predicted is None:
                continue
            kw = run.deploy_kwargs
            out.append(
                {
                    "row": res.row.row_id,
                    "source": run.source,
                    "engine": run.engine,
                    "model": kw["model"].id,
                    "hw": kw["hw"].id,
                    "quant": kw.get("quant"),
                    "layout": {k: kw[k] for k in LAYOUT_KEYS if kw.get(k, 1) != 1},
                    "metric": res.row.metric,
                    "measured_s": res.row.value * scale,
                    "simulate_s": res.predicted * scale,
                    "estimate_s": est,
                }
            )
    return out


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    rows = check()
    if "--json" in args:
        print(json.dumps(rows, indent=1))
        return
    for r in rows:
        est = (
            f"{r['estimate_s'] * 1e3:7.2f} ({r['estimate_s'] / r['measured_s'] - 1:+.0%})"
            if r["estimate_s"]
            else "      -"
        )
        print(
            f"{r['source']:12s} {r['engine']:12s} {r['model'][:18]:18s} {r['hw']:9s} {str(r['quant']):6s} "
            f"{json.dumps(r['layout']):22s} {r['metric']:12s} measured {r['measured_s'] * 1e3:7.2f} ms  "
            f"estimate {est}  simulate {r['simulate_s'] * 1e3:7.2f} ({r['simulate_s'] / r['measured_s'] - 1:+.0%})"
        )
    both = [r for r in rows if r["estimate_s"]]
    if both:
        med = statistics.median
        print(
            f"\n{len(both)} rows with both: median |error| estimate {med(abs(r['estimate_s'] / r['measured_s'] - 1) for r in both):.1%}, "
            f"simulate {med(abs(r['simulate_s'] / r['measured_s'] - 1) for r in both):.1%}; "
            f"median signed estimate {med(r['estimate_s'] / r['measured_s'] - 1 for r in both):+.1%}, "
            f"simulate {med(r['simulate_s'] / r['measured_s'] - 1 for r in both):+.1%}"
        )


if __name__ == "__main__":
    main()
