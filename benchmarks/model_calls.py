"""How often one prediction runs the cost model: `decode_step` calls for `estimate()`, its curves, its JSON.

A serialiser should print what was computed, not recompute it; curves are computed when asked for.
Counts calls (not wall-clock) for a few setups: `estimate()` alone, `estimate_curves()` (what
`--json` asks for), and `estimate_dict()` (the serialiser itself, which should be 0). Prints one
`name estimate=N curves=M serialise=K` line per setup. Before the use-case layer, `Estimate.to_dict()`
did the curves and the serialising together: default 3 + 46, tp-2 3 + 48, offload 5 + 132,
speculative 9 + 48.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

SETUPS: dict[str, dict[str, Any]] = {
    "default": {},
    "tp-2": {"model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8", "tp": 2},
    "offload": {"model": "llama-3.1-70b", "hw": "rtx-4090", "gpu_layers": 40},
    "speculative": {"model": "llama-3.1-70b", "hw": "h100-sxm", "quant": "fp8", "draft": "llama-3.2-1b"},
}


def counting(module_names: list[str], name: str) -> tuple[list[int], Callable[[], None]]:
    """Wrap `name` wherever it is bound in `module_names`; return the counter and an undo."""
    count = [0]
    undo = []
    for module_name in module_names:
        module = importlib.import_module(module_name)
        original = getattr(module, name, None)
        if original is None:
            continue

        def wrapped(*args: Any, _f: Any = original, **kwargs: Any) -> Any:
            count[0] += 1
            return _f(*args, **kwargs)

        setattr(module, name, wrapped)
        undo.append((module, original))
    return count, lambda: [setattr(m, name, f) for m, f in undo] and None


def main() -> None:
    from tokometer.report.json import estimate_dict
    from tokometer.usecases.curves import estimate_curves
    from tokometer.usecases.estimate import estimate
    from tokometer.usecases.request import EstimateRequest

    modules = [f"tokometer.costmodel.{m}" for m in ("roofline", "layout")]  # where decode_step is bound
    count, undo = counting(modules, "decode_step")
    try:
        for name, kwargs in SETUPS.items():
            count[0] = 0
            result = estimate(EstimateRequest(**kwargs))
            after_estimate = count[0]
            curves = estimate_curves(result)
            after_curves = count[0]
            estimate_dict(result, curves)
            print(
                f"{name} estimate={after_estimate} curves={after_curves - after_estimate} "
                f"serialise={count[0] - after_curves}"
            )
    finally:
        undo()


if __name__ == "__main__":
    main()
