"""List the model names of the compiled 2025-26 serving rows (or, `--single`, of the single-stream evidence)
that resolve to no catalog preset.

`fitting.serving_runs.plan_run` leaves a run unscored with "model ... is not in the model catalog"
when neither `model_words.find_model` nor `aliases.resolve_model` finds its checkpoint, or with "has an
architecture the accounting does not model (...)" when RESOLVE.toml's `[[unmodelled_model]]` says why
none can be; this prints those names with their row counts and sources, largest first (the order
presets are worth adding in), and the totals, which match the two counts of
`scripts/serving_accuracy.py`. It plans the runs only (no simulation), so it takes seconds.

    python scripts/unresolved_models.py            # a markdown table on stdout
    PYTHONPATH=src python scripts/unresolved_models.py --single   # the single-stream rows (tg, pp, ...)

`--single`: a single-stream row whose model names no preset is predicted from its printed parameter count alone
(a dense model of that size: every weight read per token, no KV cache, no window), or left unscored when it
prints none (`fitting.validation.estimate_kwargs`); the table lists both, by publication and name, largest first,
with the printed count (docs/PHYSICS.md section 4, "A row is predicted as the model it measured").
"""

from __future__ import annotations

from collections import Counter, defaultdict

MARKERS = ("is not in the model catalog", "has an architecture the accounting does not model")


def unresolved(marker: str = MARKERS[0]) -> tuple[Counter[str], dict[str, set[str]], dict[str, set[str]]]:
    """(rows per unresolved model name, sources per name, total_params_b cells per name) of the runs
    whose reason carries `marker`."""
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    counts: Counter[str] = Counter()
    sources: dict[str, set[str]] = defaultdict(set)
    params: dict[str, set[str]] = defaultdict(set)
    for path in published_paths():
        rows, _bad = read_rows(path)
        for run in group_runs(rows):
            if run.reason is None or marker not in run.reason:
                continue
            for row in run.rows:
                name = row.text("model")
                counts[name] += 1
                sources[name].add(row.source)
                if row.text("total_params_b"):
                    params[name].add(row.text("total_params_b"))
    return counts, sources, params


def single_stream() -> Counter[tuple[str, str, str]]:
    """Rows per (publication, model as printed, total_params_b cell) of the single-stream evidence whose model
    resolves to no preset (`fitting.validation._preset`, the lookup `estimate_kwargs` makes)."""
    from tokometer.fitting.evidence import read_evidence
    from tokometer.fitting.validation import _preset

    counts: Counter[tuple[str, str, str]] = Counter()
    for case in read_evidence():
        if case.text("model") and _preset(case) is None:
            counts[(case.text("source_id"), case.text("model"), case.text("total_params_b") or "-")] += 1
    return counts


def main(argv: list[str]) -> None:
    if "--single" in argv:
        counts = single_stream()
        print("Single-stream rows whose model names no preset (bare parameter counts, or unscored without one):\n")
        print("| publication | model (as printed) | rows | total_params_b cell |")
        print("|---|---|--:|---|")
        for (source, name, params), n in counts.most_common():
            print(f"| {source} | {name} | {n} | {params} |")
        print(f"\n{sum(counts.values()):,} rows, {len(counts)} names")
        return
    for marker in MARKERS:
        counts, sources, params = unresolved(marker)
        print(f"Runs whose model {marker}:\n")
        print("| model (as printed) | rows | sources | total_params_b cell |")
        print("|---|--:|---|---|")
        for name, n in counts.most_common():
            print(f"| {name} | {n} | {', '.join(sorted(sources[name]))} | {', '.join(sorted(params[name])) or '-'} |")
        print(f"\n{sum(counts.values()):,} rows, {len(counts)} names\n")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
