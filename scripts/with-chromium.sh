#!/usr/bin/env bash
# scripts/with-chromium.sh CMD… — runs CMD with the machine's headless
# Chromium and chromedriver on PATH (docs/web.md "Tests"): installs the
# Debian packages `chromium` and `chromium-driver` with apt-get when either
# binary is missing. The browser tests (tests/it/web_page.rs) start
# chromedriver themselves on a loopback port with a fresh profile. Exits
# with CMD's exit code (3 when Chromium cannot be installed).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: scripts/with-chromium.sh CMD [ARG…]" >&2
  exit 2
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "with-chromium: installing chromium and chromium-driver (apt-get)" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  echo "with-chromium: chromium or chromedriver is still missing" >&2
  exit 3
fi
exec "$@"
