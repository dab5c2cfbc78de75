"""tokometer: how fast will this model run on this hardware, why, and is my setup as fast as it should be?

The public Python API is `__all__`: one function per CLI verb (`estimate`, `simulate`, `plan`,
`validate`, `calibrate`, `fit`, `sweep`, `benchmark` (the `bench` verb; `tokometer.bench` is a package) and the coroutine `bench_async`, `probe`, `list_catalog`),
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
    "CatalogListing": "tokometer.api.catalogs",
    "Estimate": "tokometer.usecases.estimate",
    "EstimateCurves": "tokometer.usecases.curves",
    "EstimateRequest": "tokometer.usecases.request",
    "EstimateResult": "tokometer.api.predict",
    "FitResult": "tokometer.api.explore",
    "InputError": "tokometer.errors",
    "PlanResult": "tokometer.api.serving",
    "ProbeReport": "tokometer.api.measure",
    "SimulateResult": "tokometer.api.serving",
    "SweepTable": "tokometer.api.explore",
    "TokometerError": "tokometer.errors",
    "UnknownEntryError": "tokometer.errors",
    "ValidateResult": "tokometer.api.measurements",
    "bench_async": "tokometer.api.measure",
    "benchmark": "tokometer.api.measure",
    "calibrate": "tokometer.api.measurements",
    "engine_catalog": "tokometer.catalog",
    "estimate": "tokometer.api.predict",
    "estimate_curves": "tokometer.usecases.curves",
    "estimate_json": "tokometer.report.json",
    "fit": "tokometer.api.explore",
    "hardware_catalog": "tokometer.catalog",
    "list_catalog": "tokometer.api.catalogs",
    "model_catalog": "tokometer.catalog",
    "plan": "tokometer.api.serving",
    "probe": "tokometer.api.measure",
    "quant_catalog": "tokometer.catalog",
    "simulate": "tokometer.api.serving",
    "sweep": "tokometer.api.explore",
    "validate": "tokometer.api.measurements",
}

__all__ = [
    "BenchRun",
    "CalibrateResult",
    "CatalogListing",
    "Estimate",
    "EstimateCurves",
    "EstimateRequest",
    "EstimateResult",
    "FitResult",
    "InputError",
    "PlanResult",
    "ProbeReport",
    "SimulateResult",
    "SweepTable",
    "TokometerError",
    "UnknownEntryError",
    "ValidateResult",
    "__version__",
    "bench_async",
    "benchmark",
    "calibrate",
    "engine_catalog",
    "estimate",
    "estimate_curves",
    "estimate_json",
    "fit",
    "hardware_catalog",
    "list_catalog",
    "model_catalog",
    "plan",
    "probe",
    "quant_catalog",
    "simulate",
    "sweep",
    "validate",
]

if TYPE_CHECKING:
    from tokometer.api.catalogs import CatalogListing, list_catalog
    from tokometer.api.explore import FitResult, SweepTable, fit, sweep
    from tokometer.api.measure import BenchRun, ProbeReport, bench_async, benchmark, probe
    from tokometer.api.measurements import CalibrateResult, ValidateResult, calibrate, validate
    from tokometer.api.predict import EstimateResult, estimate
    from tokometer.api.serving import PlanResult, SimulateResult, plan, simulate
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
    from tokometer.errors import InputError, TokometerError, UnknownEntryError
    from tokometer.report.json import estimate_json
    from tokometer.usecases.curves import EstimateCurves, estimate_curves
    from tokometer.usecases.estimate import Estimate
    from tokometer.usecases.request import EstimateRequest


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tokometer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
