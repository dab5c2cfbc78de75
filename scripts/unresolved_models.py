"""List the model names of the compiled 2025-26 serving rows that resolve to no catalog preset.

`fitting.serving_runs.plan_run` leaves a run unscored with "model ... is not in the model catalog"
when neither `model_words.find_model` nor `aliases.resolve_model` finds its checkpoint; this prints
those names with their row counts and sources, largest first (the order presets are worth adding in),
and the total, which matches the "not in the model catalog" count of `scripts/serving_accuracy.py`.
It plans the runs only (no simulation), so it takes seconds.

    python scripts/unresolved_models.py            # a markdown table on stdout
"""

from __future__ import annotations

from collections import Counter, defaultdict


def unresolved() -> tuple[Counter[str], dict[str, set[str]], dict[str, set[str]]]:
    """(rows per unresolved model name, sources per name, total_params_b cells per name)."""
    from tokometer.fitting.serving_families import published_paths
    from tokometer.fitting.serving_runs import group_runs, read_rows

    counts: Counter[str] = Counter()
    sources: dict[str, set[str]] = defaultdict(set)
    params: dict[str, set[str]] = defaultdict(set)
    for path in published_paths():
        rows, _bad = read_rows(path)
        for run in group_runs(rows):
            if run.reason is None or "is not in the model catalog" not in run.reason:
                continue
            for row in run.rows:
                name = row.text("model")
                counts[name] += 1
                sources[name].add(row.source)
                if row.text("total_params_b"):
                    params[name].add(row.text("total_params_b"))
    return counts, sources, params


def main() -> None:
    counts, sources, params = unresolved()
    print("| model (as printed) | rows | sources | total_params_b cell |")
    print("|---|--:|---|---|")
    for name, n in counts.most_common():
        print(f"| {name} | {n} | {', '.join(sorted(sources[name]))} | {', '.join(sorted(params[name])) or '-'} |")
    print(f"\n{sum(counts.values()):,} rows, {len(counts)} names")


if __name__ == "__main__":
    main()
