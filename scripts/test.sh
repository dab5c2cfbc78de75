#!/usr/bin/env bash
# The README's test command: a virtual environment, the package with its test extras, then
# ruff, mypy and the whole pytest suite (slow and browser tests included).
#
# The extra system parts (a llama.cpp server, Chromium) are installed first by scripts/ci/*.sh,
# but a failed install cannot hide the lint, type and test results: every step runs, each
# exit code is collected, a summary names what failed, and the run exits non-zero if anything
# did, system installs included.
set -uo pipefail
cd "$(dirname "$0")/.."

# Without the package itself nothing below can run, so these steps stop the run at once.
set -e
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test,ray]'  # ray: the slow multi-worker bench test runs a local Ray head
set +e

failed=()
step() {  # step NAME COMMAND...: run it, report its exit code, remember a failure
  local name="$1"
  shift
  echo "==> $name"
  "$@"
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    failed+=("$name (exit $rc)")
    echo "==> $name FAILED with exit code $rc" >&2
  fi
  return 0
}

for extra in scripts/ci/*.sh; do
  [ -e "$extra" ] || continue
  step "system install $extra" bash "$extra"
done
if [ "${#failed[@]}" -gt 0 ]; then
  {
    echo "################################################################################"
    echo "# A system install failed: ${failed[*]}"
    echo "# Lint, types and tests run anyway; the tests that need it fail or skip, and this"
    echo "# run exits non-zero at the end."
    echo "################################################################################"
  } >&2
fi

step "ruff" ruff check src tests benchmarks scripts
step "mypy" mypy
step "pytest" python -m pytest -q "$@"

if [ "${#failed[@]}" -gt 0 ]; then
  echo >&2
  echo "scripts/test.sh: FAILED: ${#failed[@]} step(s):" >&2
  printf '  - %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "scripts/test.sh: all steps passed (system installs, ruff, mypy, pytest)"
