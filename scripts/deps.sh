#!/usr/bin/env bash
# Installs every Debian package that Drape's build, tests and Python tooling
# need. Idempotent: packages already present are skipped, and apt is not
# touched at all when nothing is missing.
set -euo pipefail

PKGS=(
  build-essential pkg-config
  libopenblas-dev          # GEMMs of the CPU backend
  libjansson-dev           # drape.config, JSON everywhere
  libcriterion-dev         # unit tests
  libsuitesparse-dev       # CHOLMOD: the cloth engine's prefactored solve
  python3-numpy python3-scipy python3-torch   # train/: assets, reference model, cross-check, bench peer
  libmicrohttpd-dev        # draped: HTTP + WebSocket upgrade
  libgnutls28-dev          # TLS through libmicrohttpd
  libmsgpack-dev           # binary stream messages (msgpack-c)
  libmeshoptimizer-dev     # the meshopt vertex codec
  curl python3-websockets python3-msgpack  # integration tests: clients nobody here wrote
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
