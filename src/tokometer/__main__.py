"""`python -m tokometer` is the same as the `tokometer` command (exit code included)."""

import sys

from tokometer.cli import main

sys.exit(main())
