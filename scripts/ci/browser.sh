#!/usr/bin/env bash
# Chromium for the browser tests (tests/test_web_browser.py): Debian's `chromium`, driven by the
# Playwright Python package. Never `playwright install`: no browser downloads. CI runs this as root
# before pytest; with CI=true a missing browser is an error, elsewhere the browser tests skip.
set -euo pipefail
CHROMIUM="${TOKOMETER_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  "$CHROMIUM" --version
  exit 0
fi
echo "browser.sh: $CHROMIUM is missing and cannot be installed here (needs root and apt-get)" >&2
if [ "${CI:-}" = "true" ]; then
  exit 1
fi
echo "browser.sh: the browser tests will be skipped" >&2
