"""tokometer: how fast will this model run on this hardware, why, and is my setup as fast as it should be?

The public Python API is `__all__`: one function per CLI verb (`estimate`, `simulate`, `plan`,
`validate`, `calibrate`, `fit`, `sweep`, `benchmark` (the `bench` verb; `tokometer.bench` is a package) and the coroutine `bench_async`, `probe`, `list_catalog`,
`show_hardware`, `show_model`, `utilization`, `feel`, `frontier` (`simulate`/`plan --frontier`), and the
`runs` verbs `list_runs`, `show_run`, `compare_runs`, `export_runs`, `import_runs`, `delete_run`, `runs_path`),
each returning a frozen result whose `to_json()` is what the verb prints with `--json`
(`tokometer.api`, docs/api.md). `estimate(EstimateRequest(...))` returns an `EstimateResult`, an
`Estimate` (data); `estimate_curves` adds the batch/context/offload curves; the catalogs list what
names resolve to. Errors a user can cause
are `TokometerError`s; `InputError.field` names the parameter at fault.

Names load on first use, so `import tokometer` (and the CLI's start-up) stays quick.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "BenchRun": "tokometer.api.measure",
    "CalibrateResult": "tokometer.api.measurements",
    "CatalogEntry": "tokometer.api.catalogs",
    "CatalogListing": "tokometer.api.catalogs",
    "Estimate": "tokometer.usecases.estimate",
    "EstimateCurves": "tokometer.usecases.curves",
    "EstimateRequest": "tokometer.usecases.request",
    "EstimateResult": "tokometer.api.predict",
    "FeelPlan": "tokometer.api.feel",
    "FitResult": "tokometer.api.explore",
    "FrontierResult": "tokometer.api.frontier",
    "ImportedRuns": "tokometer.api.runs",
    "InputError": "tokometer.errors",
    "PlanResult": "tokometer.api.serving",
    "ProbeReport": "tokometer.api.measure",
    "RunComparison": "tokometer.api.runs",
    "RunExport": "tokometer.api.runs",
    "RunList": "tokometer.api.runs",
    "RunsPath": "tokometer.api.runs",
    "SimulateRequest": "tokometer.usecases.simulate",
    "SimulateResult": "tokometer.api.serving",
    "StoredRun": "tokometer.api.runs",
    "SweepTable": "tokometer.api.explore",
    "TokometerError": "tokometer.errors",
    "UnknownEntryError": "tokometer.errors",
    "UtilizationResult": "tokometer.api.predict",
    "ValidateResult": "tokometer.api.measurements",
    "bench_async": "tokometer.api.measure",
    "benchmark": "tokometer.api.measure",
    "calibrate": "tokometer.api.measurements",
    "compare_runs": "tokometer.api.runs",
    "delete_run": "tokometer.api.runs",
    "engine_catalog": "tokometer.catalog",
    "estimate": "tokometer.api.predict",
    "estimate_curves": "tokometer.usecases.curves",
    "estimate_json": "tokometer.report.json",
    "export_runs": "tokometer.api.runs",
    "feel": "tokometer.api.feel",
    "fit": "tokometer.api.explore",
    "frontier": "tokometer.api.frontier",
    "hardware_catalog": "tokometer.catalog",
    "import_runs": "tokometer.api.runs",
    "list_catalog": "tokometer.api.catalogs",
    "list_runs": "tokometer.api.runs",
    "model_catalog": "tokometer.catalog",
    "plan": "tokometer.api.serving",
    "probe": "tokometer.api.measure",
    "quant_catalog": "tokometer.catalog",
    "runs_path": "tokometer.api.runs",
    "show_hardware": "tokometer.api.catalogs",
    "show_model": "tokometer.api.catalogs",
    "show_run": "tokometer.api.runs",
    "simulate": "tokometer.api.serving",
    "sweep": "tokometer.api.explore",
    "utilization": "tokometer.api.predict",
    "validate": "tokometer.api.measurements",
}

__all__ = [
    "BenchRun",
    "CalibrateResult",
    "CatalogEntry",
    "CatalogListing",
    "Estimate",
    "EstimateCurves",
    "EstimateRequest",
    "EstimateResult",
    "FeelPlan",
    "FitResult",
    "FrontierResult",
    "ImportedRuns",
    "InputError",
    "PlanResult",
    "ProbeReport",
    "RunComparison",
    "RunExport",
    "RunList",
    "RunsPath",
    "SimulateRequest",
    "SimulateResult",
    "StoredRun",
    "SweepTable",
    "TokometerError",
    "UnknownEntryError",
    "UtilizationResult",
    "ValidateResult",
    "__version__",
    "bench_async",
    "benchmark",
    "calibrate",
    "compare_runs",
    "delete_run",
    "engine_catalog",
    "estimate",
    "estimate_curves",
    "estimate_json",
    "export_runs",
    "feel",
    "fit",
    "frontier",
    "hardware_catalog",
    "import_runs",
    "list_catalog",
    "list_runs",
    "model_catalog",
    "plan",
    "probe",
    "quant_catalog",
    "runs_path",
    "show_hardware",
    "show_model",
    "show_run",
    "simulate",
    "sweep",
    "utilization",
    "validate",
]

if TYPE_CHECKING:
    from tokometer.api.catalogs import (
        CatalogEntry,
        CatalogListing,
        list_catalog,
        show_hardware,
        show_model,
    )
    from tokometer.api.explore import FitResult, SweepTable, fit, sweep
    from tokometer.api.feel import FeelPlan, feel
    from tokometer.api.frontier import FrontierResult, frontier
    from tokometer.api.measure import BenchRun, ProbeReport, bench_async, benchmark, probe
    from tokometer.api.measurements import CalibrateResult, ValidateResult, calibrate, validate
    from tokometer.api.predict import EstimateResult, UtilizationResult, estimate, utilization
    from tokometer.api.runs import (
        ImportedRuns,
        RunComparison,
        RunExport,
        RunList,
        RunsPath,
        StoredRun,
        compare_runs,
        delete_run,
        export_runs,
        import_runs,
        list_runs,
        runs_path,
        show_run,
    )
    from tokometer.api.serving import PlanResult, SimulateResult, plan, simulate
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
    from tokometer.errors import InputError, TokometerError, UnknownEntryError
    from tokometer.report.json import estimate_json
    from tokometer.usecases.curves import EstimateCurves, estimate_curves
    from tokometer.usecases.estimate import Estimate
    from tokometer.usecases.request import EstimateRequest
    from tokometer.usecases.simulate import SimulateRequest


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tokometer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
