"""Use-cases: what the CLI and the web app share, a typed request in and data out.

`estimate` (one prediction), `explore` (fit, sweep, utilisation), `validation` (score predictions on
measured rows) and `calibration` (fit the efficiency table on them). They resolve names through the
catalogs and ingest, run the pure cost model, and print nothing.
"""
