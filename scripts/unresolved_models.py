"""List the model names of the compiled 2025-26 serving rows that resolve to no catalog preset.

`fitting.serving_runs.plan_run` leaves a run unscored with "model ... is not in the model catalog"
when neither `model_words.find_model` nor `aliases.resolve_model` finds its checkpoint, or with "has an
architecture the accounting does not model (...)" when RESOLVE.toml's `[[unmodelled_model]]` says why
none can be; this prints those names with their row counts and sources, largest first (the order
presets are worth adding in), and the totals, which match the two counts of
`scripts/serving_accuracy.py`. It plans the runs only (no simulation), so it takes seconds.

    python scripts/unresolved_models.py            # a markdown table on stdout
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


def main() -> None:
    for marker in MARKERS:
        counts, sources, params = unresolved(marker)
        print(f"Runs whose model {marker}:\n")
        print("| model (as printed) | rows | sources | total_params_b cell |")
        print("|---|--:|---|---|")
        for name, n in counts.most_common():
            print(f"| {name} | {n} | {', '.join(sorted(sources[name]))} | {', '.join(sorted(params[name])) or '-'} |")
        print(f"\n{sum(counts.values()):,} rows, {len(counts)} names\n")


if __name__ == "__main__":
    main()
