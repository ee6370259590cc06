#!/usr/bin/env bash
# Installs the npm dependencies of web/ (three, meshoptimizer, ws,
# playwright-core) and deploy/ (kubernetes-models, prometheus-operator models,
# yaml: the manifest checks) from each folder's package-lock.json when its
# node_modules is missing or older than the lock file. Independent of the
# Makefile; quiet when nothing is to do.
# Exit status: 0 installed or already there; 1 npm missing or `npm ci` failed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
for dir in web deploy; do
    cd "$root/$dir"
    if [ -d node_modules ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
        continue
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "scripts/npm.sh: npm not found (install nodejs and npm)" >&2
        exit 1
    fi
    echo "scripts/npm.sh: npm ci in $dir/" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
done
