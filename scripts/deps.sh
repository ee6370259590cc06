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
  zlib1g-dev               # inflate for .npz motion files (runtime/npz.c)
  curl python3-websockets python3-msgpack  # integration tests: clients nobody here wrote
  clang libclang-rt-dev libomp-dev  # fuzz/: libFuzzer and the sanitizers' runtimes, OpenMP for clang
)

# node and npm for the viewer's tests (three.js, playwright-core): Debian's,
# unless a node is already installed some other way
if ! command -v node >/dev/null 2>&1; then PKGS+=(nodejs npm); fi
PKGS+=(chromium nginx-light openssl)  # the viewer's browser test, the routing test, TLS test certificates

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# the web/ npm packages (from the lock file; quiet when already there)
"$(dirname "$0")/npm.sh"
