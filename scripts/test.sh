#!/usr/bin/env bash
# The README's test command: a virtual environment, the package with its test extras, then
# ruff, mypy and the whole pytest suite (slow and browser tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test]'
if [ -x scripts/ci-extras.sh ]; then bash scripts/ci-extras.sh; fi
ruff check src tests benchmarks scripts
mypy
python -m pytest -q "$@"
