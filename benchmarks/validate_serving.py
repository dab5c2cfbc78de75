"""Speed of `tokometer validate --serving`: the 947 shipped serving rows through the simulator.

Rows that share a setup (source, engine, hardware, model, parallelism, precision, lengths, scenario,
rate, concurrency, batch) share one simulation, so the file is ~470 runs, each bounded by the
per-run time limit. Target: the whole file in under 60 s on a 2-core machine. With `--against DIR`
(a checkout, default /work/main when it exists) the same validation is timed there too, in a child
process, the two runs alternating, and the ratio printed. With `--lso` the leave-one-source-out
refits are timed as well (not part of the 60 s target). Prints the figures and, as its last line,
`seconds=<best wall time of this tree>`.

    PYTHONPATH=src python benchmarks/validate_serving.py [--runs 3] [--against /work/main] [--lso]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import sys, time
from tokometer.fitting.serving_fit import validate_serving
from tokometer.fitting.serving_validate import default_data_path
start, cpu = time.perf_counter(), time.process_time()
rep = validate_serving(default_data_path(), loso={loso})
print(time.perf_counter() - start, time.process_time() - cpu, rep["scored"], rep["rows"])
"""


def timed(tree: Path, lso: bool) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of one validation of the shipped serving file with `tree`'s code (a fresh process)."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, "-c", CHILD.format(loso=lso)], env=env, capture_output=True, text=True, check=True)
    seconds, cpu, scored, rows = out.stdout.split()
    return float(seconds), float(cpu), int(scored), int(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--against", type=Path, default=Path("/work/main") if Path("/work/main/src").is_dir() else None)
    parser.add_argument("--lso", action="store_true", help="time leave-one-source-out too")
    args = parser.parse_args()
    trees = [("this tree", ROOT)]
    if args.against is not None and args.against.resolve() != ROOT:
        trees.append((f"{args.against}", args.against))
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    for _ in range(args.runs):  # alternate, so load on the machine falls on both alike
        for name, tree in trees:
            seconds, cpu, scored, rows = timed(tree, args.lso)
            best[name] = min(best.get(name, float("inf")), seconds)
            best_cpu[name] = min(best_cpu.get(name, float("inf")), cpu)
            print(f"{name}: {seconds:.2f} s wall, {cpu:.2f} s CPU, {scored} of {rows} rows scored", flush=True)
    for name, seconds in best.items():
        print(f"best {name}: {seconds:.2f} s wall, {best_cpu[name]:.2f} s CPU" + (" (target < 60 s)" if not args.lso else ""))
    if len(best) == 2:  # CPU time: a shared machine's wall time moves with the other processes' load
        other = trees[1][0]
        print(f"ratio this tree / {other}: {best['this tree'] / best[other]:.2f} wall, "
              f"{best_cpu['this tree'] / best_cpu[other]:.2f} CPU")
    print(f"seconds={best['this tree']:.2f}")


if __name__ == "__main__":
    main()
