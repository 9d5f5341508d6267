#!/usr/bin/env bash
# The dashboard's browser tests drive Debian's Chromium (browsers cannot be downloaded here). On a fresh machine of
# this project's kind (root, Debian's apt reachable) `npm test` installs it first; elsewhere it says what is missing.
set -u
path="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$path" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the browser tests (apt-get)…"
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null); then
    exit 0
  fi
fi
echo "warning: no Chromium at $path; the dashboard's browser tests will fail. Install it (apt-get install -y chromium) or set CHROMIUM_PATH." >&2
exit 0
