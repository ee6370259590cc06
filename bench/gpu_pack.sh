#!/bin/bash
# Pack a build for a GPU machine that lacks the project's packages (the
# workplace's device machines carry CUDA and PyTorch but not libmicrohttpd,
# jansson, Criterion, OpenBLAS, ...): the programs gpu_check.sh runs, the test
# bundles, and every shared library they need beyond the C runtime and CUDA's
# own, as DEST/pack.tar.xz (DEST default .gpu; about 30 MB). On that machine:
#   mkdir -p /tmp/g && tar -xJf DEST/pack.tar.xz -C /tmp/g && bench/gpu_check.sh /tmp/g/build
#
#   bench/gpu_pack.sh [BUILD [DEST]]
set -eu
B=${1:-build}
D=${2:-.gpu}
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
mkdir -p "$S/build/data" "$S/lib" "$D"
for f in drape draped drape_tests drape_bench_gpu drape_bench_server libdrape_cuda.so; do
    cp "$B/$f" "$S/build/"
    strip --strip-debug "$S/build/$f"
done
cp "$B"/data/*.safetensors "$S/build/data/"
# libc, libstdc++ and CUDA's libraries come from that machine's own image
for f in "$S"/build/*; do [ -f "$f" ] && ldd "$f"; done | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libcudart)\.so|/ld-linux' |
    xargs -r cp -L -t "$S/lib"
tar -C "$S" -cJf "$D/pack.tar.xz" build lib
ls -la "$D/pack.tar.xz"
