"""Use-cases: what the CLI and the web app share, a typed request in and data out.

`request` (the inputs), `estimate` (one prediction) and its `curves`; `fit`, `sweep` and
`utilization` (exploring around estimates); `validation` (score predictions on measured rows) and
`calibration` (fit the efficiency table on them, building on validation); `benchmark` (bench,
predict, grade, save a run); `simulate`, `plan`, `serving_fit` and `serving_validate` (the
serving simulator: a busy server, its capacity plan, its fit and validation on serving.csv). They resolve names through
the catalogs and ingest (`resolve`), apply the product `policy`, run the pure cost model, and print
nothing.
"""
