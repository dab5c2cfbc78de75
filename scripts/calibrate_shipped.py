"""Refit the shipped efficiency table on the shipped evidence and write `catalog/data/efficiency.toml`.

    python scripts/calibrate_shipped.py            # measurements.csv + published/*.csv -> efficiency.toml
    python scripts/calibrate_shipped.py --out X    # the same fit, written to X

`tokometer calibrate` writes a user's own table; this script is how the shipped one is made (the same
`tokometer.fitting.model.calibrate`), so tests/test_validate.py can check the shipped file is its output.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from tokometer.fitting.model import write_shipped_table

    target = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    path, table, meta = write_shipped_table(target)
    print(f"wrote {path}: {len(table)} entries fitted on {meta['data']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
