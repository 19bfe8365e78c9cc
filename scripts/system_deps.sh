#!/usr/bin/env bash
# System packages the test suite needs beyond the Python venv: Debian's Chromium, which the browser
# tests (tests/browser/, pytest marker `browser`) drive through Playwright. Playwright's own browser
# download is not used: the tests launch /usr/bin/chromium.
#
# Idempotent and fast: when /usr/bin/chromium exists this returns at once. Otherwise it runs
# `apt-get update` once and `apt-get install -y chromium`, non-interactively (CI has no stdin). It needs
# root (or sudo without a password); without either it says how to install Chromium and exits 1.
#
#   bash scripts/system_deps.sh
set -euo pipefail

CHROMIUM="${XAIKIT_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "system_deps: $CHROMIUM is missing and this user cannot install packages." >&2
  echo "system_deps: install Debian's chromium (apt-get install chromium) or set XAIKIT_CHROMIUM." >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "system_deps: $CHROMIUM is missing and apt-get is not available; install Chromium by hand" >&2
  echo "system_deps: and point XAIKIT_CHROMIUM at its executable." >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "system_deps: installing chromium with apt-get (once)"
"${SUDO[@]}" apt-get update -qq </dev/null
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium </dev/null
if [ ! -x "$CHROMIUM" ]; then
  echo "system_deps: apt-get finished but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "system_deps: $("$CHROMIUM" --version 2>/dev/null || echo chromium) installed"
