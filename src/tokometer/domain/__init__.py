"""The shared vocabulary every layer speaks: frozen value types with units in their field names.

`specs` (hardware, formats, models, engines, workloads), `serving_specs` (a serving engine's scheduler
policy), `runrecord` (a benchmark run), `heldbatch` (finished requests queued for the store) and
`units` (unit constants) and `jsontext` (the one JSON rendering). Nothing here imports another tokometer package but `errors`.
"""
