#!/usr/bin/env bash
# Installs Chromium from Debian's packages when no Chromium or Chrome is on PATH, for the web UI's
# browser test (which skips without one, but fails under CI). Does nothing when one is there.
set -euo pipefail

for b in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
  if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done
if [ -n "${WORK_CHROMIUM:-}" ] && [ -x "$WORK_CHROMIUM" ]; then exit 0; fi

echo "chromium not found: installing it from Debian's packages" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "chromium is still missing after the install" >&2; exit 1; }
