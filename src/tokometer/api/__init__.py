"""The public Python API: one function per CLI verb, over the use cases (the entry layer).

One small module per verb group: `predict` (estimate), `serving` (simulate, plan), `measurements`
(validate, calibrate), `explore` (fit, sweep), `measure` (benchmark, bench_async, probe), `catalogs`
(list_catalog); `result` is their JSON base. `tokometer/__init__.py` exports each name lazily, and
this package imports nothing, so each CLI command loads only its own verb.

Each function takes the CLI's option names and units as keyword arguments (or, for `estimate`, an
`EstimateRequest`) and returns a frozen result whose `to_dict()` / `to_json()` equal what the verb
prints with `--json` on the same inputs; the CLI commands call these functions and only parse
options and render. Heavy modules load inside the functions, so importing this module is cheap.
Errors a caller can cause are `TokometerError`s (`InputError.field` names the argument at fault).
"""
