#!/bin/sh
# Prints the Debian/Ubuntu packages that own the shared libraries the given
# binaries load, one per line: the run stage of the Dockerfile installs
# exactly these on the matching slim/runtime base (same distribution as the
# build stage, so the names agree). Fails when a library has no package
# (then the run stage could not provide it).
#   deploy/docker/runtime-packages.sh build/draped build/drape
set -eu
libs=$(for bin in "$@"; do ldd "$bin"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
for lib in $libs; do
    # usrmerge: dpkg may know the file under /lib or under /usr/lib
    real=$(readlink -f "$lib")
    pkg=""
    for p in "$lib" "$real" "${lib#/usr}" "${real#/usr}" "/usr$lib" "/usr$real"; do
        pkg=$(dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
    done
    if [ -z "$pkg" ]; then
        echo "runtime-packages: no package owns $lib" >&2
        exit 1
    fi
    echo "$pkg"
done | sort -u
