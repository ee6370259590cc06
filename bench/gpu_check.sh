#!/bin/bash
# `make gpu-check`: everything that needs a GPU, in one run that ends within
# GPU_CHECK_SECONDS (8 minutes): the device's facts, the CUDA tests, the GPU
# benchmark (bench_gpu.c: module A and B on the CUDA backend at its four
# precisions, the CPU backend and the PyTorch reference on the same GPU),
# draped on the CUDA backend with the default model under 1,000 avatars x 30
# fps (gpu_load.sh), the refine step on the device against the host
# (bench_gpu.c --refine), PyTorch's torch.compile at paper scale and batch
# 1, 256, 8, 32 and 64, then the goals' table (gpu_goals.py: each goal's row,
# ours, the peer, the goal, pass, FAIL or unmeasured). Then, as far as the
# time allows, the extras: where the device time goes and the kernels'
# variants weighed (gpu_profile.sh), the device tests on the variants the
# defaults do not take, draped's benchmark on the CUDA backend (bench_server.c) and
# training on CUDA (the train tests, whose fits take the GPU when there is
# one, and train.py fit's speed there against the CPU, train_speed.sh).
#
#   bench/gpu_check.sh [BUILD]     BUILD: the build folder (default build)
#   env: GPU_CHECK_LOG  folder for one log per step (default BUILD/gpu-check)
#        GPU_CHECK_SECONDS  the whole run's limit (default 480): a step's own
#                       limit shrinks to what is left, so the run ends in time
#        GPU_CHECK_STEPS    the steps to run (default: device tests bench_gpu
#                       load refine torch_compile goals, then the extras
#                       profile variants bench_server train_tests train_speed); steps named here must run
#        GPU_GOAL_PRECISION the precision the goals are judged at (fp16)
#        DRAPE_PYTHON   a python3 with torch and numpy (default: python3 if it
#                       imports torch, else /usr/bin/python3)
#
# Every step runs under its own time limit and the script goes on after a
# failing step, so that one run brings back all it can; it exits with the
# first failing step's status. A step that the deadline leaves no time for
# fails the run, except the extras of the default list, which are reported
# as not run. Binaries built elsewhere run too: a folder
# lib/ beside BUILD (bench/gpu_pack.sh fills it) goes on LD_LIBRARY_PATH, and
# cuBLAS is looked for where CUDA images keep it when the plugin's rpath
# misses it.
set -u
B=${1:-build}
LOG=${GPU_CHECK_LOG:-$B/gpu-check}
mkdir -p "$LOG"
[ -d "$B/../lib" ] && export LD_LIBRARY_PATH="$(cd "$B/../lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$B/libdrape_cuda.so" 2>/dev/null | grep -q 'not found'; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
             $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))' 2>/dev/null); do
        [ -e "$d/libcublas.so.13" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" && break
    done
fi
if [ -z "${DRAPE_PYTHON:-}" ]; then
    if python3 -c 'import torch' 2>/dev/null; then DRAPE_PYTHON=$(command -v python3); else DRAPE_PYTHON=/usr/bin/python3; fi
fi
export DRAPE_PYTHON OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
export DRAPE_DATA=$B/data DRAPE_BIN=$B/drape DRAPED_BIN=$B/draped
MODEL=models/default.safetensors
[ -e "$MODEL" ] || MODEL=$B/data/small_random.safetensors

first_rc=0
TOTAL=${GPU_CHECK_SECONDS:-480}
EXTRAS=" profile variants bench_server train_tests train_speed "
# the goals' table reads the measuring steps' logs: they leave it its seconds
GOALS_RESERVE=0
case " ${GPU_CHECK_STEPS:-goals} " in *" goals "*) GOALS_RESERVE=10 ;; esac
# step NAME SECONDS CMD...: run CMD under a limit, log to LOG/NAME.log
step() {
    local name=$1 limit=$2 rc left extra=0
    shift 2
    case " ${GPU_CHECK_STEPS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    [ -z "${GPU_CHECK_STEPS:-}" ] && [[ "$EXTRAS" == *" $name "* ]] && extra=1
    left=$((TOTAL - SECONDS))
    [ "$name" != goals ] && [ "$extra" -eq 0 ] && left=$((left - GOALS_RESERVE))
    if [ "$extra" -eq 1 ] && [ "$left" -lt "$limit" ]; then
        echo "== $name: not run, ${left}s of the run's ${TOTAL}s left (an extra: GPU_CHECK_STEPS=$name runs it)"
        return 0
    fi
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -le 5 ]; then
        echo "== $name: not run, the run's ${TOTAL}s are spent"
        [ "$first_rc" -eq 0 ] && first_rc=124
        return 0
    fi
    echo "== $name ($(date +%T), limit ${limit}s)"
    timeout -k 5 "$limit" "$@" 2>&1 | tee "$LOG/$name.log"
    rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc"
    [ "$rc" -ne 0 ] && [ "$first_rc" -eq 0 ] && first_rc=$rc
    return 0
}

# device: fails when there is no GPU or the plugin misses a library
step device 20 bash -c 'nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || exit 3
    nvcc --version 2>/dev/null | tail -1; nproc; ldd '"$B"'/libdrape_cuda.so | grep -E "cublas|cudart|not found"
    ! ldd '"$B"'/libdrape_cuda.so '"$B"'/drape_tests '"$B"'/draped | grep "not found"'
# tests: a device test skips without a device; here that is a failure, not a pass
step tests 100 bash -c '"$0" --filter "cuda*/*" --verbose=1 --jobs 4 2>&1 | grep -v "is disabled" | tee "$1"; rc=${PIPESTATUS[0]}
    grep -q "no CUDA device" "$1" && { echo "tests: the device tests skipped (no CUDA device)"; exit 3; }; exit $rc' \
    "$B/drape_tests" "$LOG/tests.full"
case " ${GPU_CHECK_STEPS:-bench_gpu} " in *" bench_gpu "*) rm -f "$LOG/bench_gpu.jsonl" ;; esac
step bench_gpu 150 env DRAPE_BENCH_JSON="$LOG/bench_gpu.jsonl" \
    "$B/drape_bench_gpu" "$B/data/small_random.safetensors" "$B/data/paper_random.safetensors"
step load 50 bench/gpu_load.sh "$B" "$MODEL" 1000 30 10
# the refine step has never run on a device: a core step, before the peer
step refine 40 env DRAPE_BENCH_THREADS=4 "$B/drape_bench_gpu" --refine "$MODEL"
# the peer last of the measuring steps (its compiles take the longest);
# batch 256, the goal's, right after batch 1
step torch_compile 140 "$DRAPE_PYTHON" train/bench_ref.py --model "$B/data/paper_random.safetensors" \
    --device cuda --batches 1,256,8,32,64 --iters 20 --compile
step goals 10 "$DRAPE_PYTHON" bench/gpu_goals.py "$LOG"
# where the device time goes, and the kernels' variants weighed; the device
# tests again on the variants the defaults do not take
step profile 90 bench/gpu_profile.sh "$B" "$MODEL"
step variants 100 bash -c 'DRAPE_CUDA_CONV_BK=32 DRAPE_CUDA_REFINE_EDGES=1 DRAPE_CUDA_REFINE_THREADS=512 \
    "$0" --filter "cuda/*" --jobs 4 && DRAPE_CUDA_CONV_WARPS=4 "$0" --filter "cuda/*" --jobs 4' "$B/drape_tests"
# draped/raw takes five rounds of 3-s and 8-s blocks (about 70 s), quiet only here
step bench_server 150 env DRAPE_BENCH_BACKEND=cuda DRAPE_BENCH_THREADS=4 DRAPE_BENCH_QUIET_ONLY=1 \
    "$B/drape_bench_server" "$MODEL" "$B/draped" "$B/drape"
step train_tests 150 "$B/drape_tests" --filter 'train/*' --jobs 4
step train_speed 200 bench/train_speed.sh "$B" 150
exit $first_rc
