#!/usr/bin/env bash
# The README's test command: a virtual environment, the package with its test extras, then
# ruff, mypy and the whole pytest suite (slow and browser tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test]'
# extra system parts some tests need (a llama.cpp server, Chromium): one script each
for extra in scripts/ci/*.sh; do [ -e "$extra" ] && bash "$extra"; done
ruff check src tests benchmarks scripts
mypy
python -m pytest -q "$@"
