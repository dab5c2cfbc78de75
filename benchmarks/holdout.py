"""Speed of the hold-outs: one process against one per core (`fitting.workers.fork_map`), side by side.

Refits `--folds` publications of the shipped evidence (leave-one-source-out, each fit with its bands) with
`TOKOMETER_FIT_WORKERS=1`, then with the default (one process per usable core), checks both give the same
predictions, and prints each time and, as its last line, `speedup=<serial / parallel>`.
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--folds", type=int, default=4)
    args = parser.parse_args()

    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.model import case_source, cross_validate
    from tokometer.fitting.workers import FIT_WORKERS_ENV, fit_workers

    cases = read_evidence()
    sources = sorted({case_source(c) for c in cases})[: args.folds]
    only = [c for c in cases if case_source(c) in sources]
    times: dict[str, float] = {}
    results = {}
    for label, setting in (("serial", "1"), ("parallel", "")):
        os.environ[FIT_WORKERS_ENV] = setting
        start = time.perf_counter()
        results[label] = cross_validate(cases, case_source, only=only)
        times[label] = time.perf_counter() - start
        print(f"{label}: {times[label]:.1f} s for {len(sources)} folds ({fit_workers(len(sources))} process(es))")
    same = all(a.predicted == b.predicted and a.reason == b.reason for a, b in zip(results["serial"], results["parallel"], strict=True))
    print(f"same predictions: {same}")
    print(f"speedup={times['serial'] / times['parallel']:.2f}")


if __name__ == "__main__":
    main()
