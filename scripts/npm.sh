#!/usr/bin/env bash
# Installs the web/ npm dependencies (three, meshoptimizer, ws, playwright-core)
# from web/package-lock.json when web/node_modules is missing or older than
# the lock file. Independent of the Makefile; quiet when nothing is to do.
# Exit status: 0 installed or already there; 1 npm missing or `npm ci` failed.
set -euo pipefail
cd "$(dirname "$0")/../web"
if [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "scripts/npm.sh: npm not found (install nodejs and npm)" >&2
    exit 1
fi
echo "scripts/npm.sh: npm ci in web/" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
