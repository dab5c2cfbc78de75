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
    "BenchRun": "tokometer.api",
    "CalibrateResult": "tokometer.api",
    "CatalogListing": "tokometer.api",
    "Estimate": "tokometer.usecases.estimate",
    "EstimateCurves": "tokometer.usecases.curves",
    "EstimateRequest": "tokometer.usecases.request",
    "EstimateResult": "tokometer.api",
    "FitResult": "tokometer.api",
    "InputError": "tokometer.errors",
    "PlanResult": "tokometer.api",
    "ProbeReport": "tokometer.api",
    "SimulateResult": "tokometer.api",
    "SweepTable": "tokometer.api",
    "TokometerError": "tokometer.errors",
    "UnknownEntryError": "tokometer.errors",
    "ValidateResult": "tokometer.api",
    "bench_async": "tokometer.api",
    "benchmark": "tokometer.api",
    "calibrate": "tokometer.api",
    "engine_catalog": "tokometer.catalog",
    "estimate": "tokometer.api",
    "estimate_curves": "tokometer.usecases.curves",
    "estimate_json": "tokometer.report.json",
    "fit": "tokometer.api",
    "hardware_catalog": "tokometer.catalog",
    "list_catalog": "tokometer.api",
    "model_catalog": "tokometer.catalog",
    "plan": "tokometer.api",
    "probe": "tokometer.api",
    "quant_catalog": "tokometer.catalog",
    "simulate": "tokometer.api",
    "sweep": "tokometer.api",
    "validate": "tokometer.api",
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
    from tokometer.api import (
        BenchRun,
        CalibrateResult,
        CatalogListing,
        EstimateResult,
        FitResult,
        PlanResult,
        ProbeReport,
        SimulateResult,
        SweepTable,
        ValidateResult,
        bench_async,
        benchmark,
        calibrate,
        estimate,
        fit,
        list_catalog,
        plan,
        probe,
        simulate,
        sweep,
        validate,
    )
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
