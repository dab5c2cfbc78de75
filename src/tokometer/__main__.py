"""`python -m tokometer` is the same as the `tokometer` command."""

from tokometer.cli import main

main()
