"""Fitting and checking the efficiency model against published measurements.

One row type (`rows.Case`, read by `rows.read_cases`; the shipped evidence by
`evidence.read_evidence`), the physics columns of a row (`features`), the fits (`calibration`, with the
partial pooling of `shrinkage`), one splitter (`splits`: leave one hardware / source / family / build
out, k-fold), one band routine (`bands`, shared by single-stream and serving), the cross-validation and
the sklearn-like `model.fit(rows) -> Model` with `predict` and `score`, and the fitted table's file
(`tablefile`). Everything here is off the quick CLI path: `tokometer estimate` reads the fitted table only.
"""
