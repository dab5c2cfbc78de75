"""tokometer: how fast will this model run on this hardware, why, and is my setup as fast as it should be?

The public Python API is `__all__`: `estimate(EstimateRequest(...))` returns an `Estimate` (data);
`estimate_curves` adds the batch/context/offload curves; `estimate_json` gives the JSON shape that
`tokometer estimate --json` prints; the catalogs list what names resolve to. Errors a user can cause
are `TokometerError`s; `InputError.field` names the parameter at fault.

Names load on first use, so `import tokometer` (and the CLI's start-up) stays quick.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "Estimate": "tokometer.usecases.estimate",
    "EstimateCurves": "tokometer.usecases.curves",
    "EstimateRequest": "tokometer.usecases.request",
    "InputError": "tokometer.errors",
    "TokometerError": "tokometer.errors",
    "UnknownEntryError": "tokometer.errors",
    "engine_catalog": "tokometer.catalog",
    "estimate": "tokometer.usecases.estimate",
    "estimate_curves": "tokometer.usecases.curves",
    "estimate_json": "tokometer.report.json",
    "hardware_catalog": "tokometer.catalog",
    "model_catalog": "tokometer.catalog",
    "quant_catalog": "tokometer.catalog",
}

__all__ = [
    "Estimate",
    "EstimateCurves",
    "EstimateRequest",
    "InputError",
    "TokometerError",
    "UnknownEntryError",
    "__version__",
    "engine_catalog",
    "estimate",
    "estimate_curves",
    "estimate_json",
    "hardware_catalog",
    "model_catalog",
    "quant_catalog",
]

if TYPE_CHECKING:
    from tokometer.catalog import engine_catalog, hardware_catalog, model_catalog, quant_catalog
    from tokometer.errors import InputError, TokometerError, UnknownEntryError
    from tokometer.report.json import estimate_json
    from tokometer.usecases.curves import EstimateCurves, estimate_curves
    from tokometer.usecases.estimate import Estimate, estimate
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
