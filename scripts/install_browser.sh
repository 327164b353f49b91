#!/usr/bin/env bash
# The browser the report.html tests drive: the operating system's Chromium (Debian's package
# `chromium`, /usr/bin/chromium), never a browser downloaded by a test tool. Safe to run again;
# without root or apt-get it says what to install and exits 0 (the browser tests then skip,
# each saying why).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  /usr/bin/chromium --version
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
  /usr/bin/chromium --version
else
  echo "install Debian's chromium package (sudo apt-get install chromium) to run the report.html browser tests" >&2
fi
