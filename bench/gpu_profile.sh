#!/bin/bash
# `make gpu-check`'s profile step: where a batch's device time goes on this
# GPU (bench_gpu --profile: each stage's device time with graphs off), for
# the batches the goals are about, and the kernels' variants weighed on the
# same machine: the tensor-core conv's K chunks (DRAPE_CUDA_CONV_BK 64, the
# default, or 32) and its 4-warp variant (DRAPE_CUDA_CONV_WARPS=4) at paper
# scale; the refine kernel's shape
# (DRAPE_CUDA_REFINE_EDGES, DRAPE_CUDA_REFINE_THREADS) and its fixed cost
# apart from its sweeps (DRAPE_CUDA_REFINE_ITERS=1) on the default model.
# The first line of each case is its ms per batch with graphs, as the
# service runs it. The refine cases take MODEL's first garment, refined in
# the shipped model.
#
#   bench/gpu_profile.sh BUILD MODEL
set -u -o pipefail
B=${1:?build folder}
MODEL=${2:?the default model}
FP16=3
Q16=2
one() { # one [ENV=VALUE...] -- BUNDLE BATCH PACK
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    echo "== ${envs[*]:-defaults}: $(basename "$1") batch $2"
    env ${envs[@]+"${envs[@]}"} "$B/drape_bench_gpu" --profile "$1" "$FP16" "$2" 0 "$3" 2>&1 | grep -v '^|---'
}
rc=0
for b in 1 256; do one -- "$B/data/small_random.safetensors" $b 0 || rc=1; done
for v in DRAPE_CUDA_CONV_BK=64 DRAPE_CUDA_CONV_BK=32 DRAPE_CUDA_CONV_WARPS=4; do
    for b in 1 256; do one $v -- "$B/data/paper_random.safetensors" $b 0 || rc=1; done
done
for b in 1 128 256; do one -- "$MODEL" $b $Q16 || rc=1; done
one DRAPE_CUDA_REFINE_EDGES=1 -- "$MODEL" 128 $Q16 || rc=1
one DRAPE_CUDA_REFINE_THREADS=512 -- "$MODEL" 128 $Q16 || rc=1
for b in 1 128; do one DRAPE_CUDA_REFINE_ITERS=1 -- "$MODEL" $b $Q16 || rc=1; done
exit $rc
