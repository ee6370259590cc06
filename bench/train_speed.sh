#!/bin/bash
# train.py fit's speed on the default model's network (docs/design.md §2.6's default
# preset with `make model`'s INIT_ARGS), per device: one T-shirt walk from the
# teacher, then STEPS steps of `make model`'s stage 1 settings on CUDA (when
# present) and on the CPU with all cores and with 2 threads; prints each run's
# s/step (train.py's progress line: the mean over all its steps).
#
#   bench/train_speed.sh [BUILD [STEPS]]    env DRAPE_PYTHON (default /usr/bin/python3)
set -eu
B=${1:-build}
STEPS=${2:-150}
PY=${DRAPE_PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$PY" train/train.py init --preset default --garments tshirt --set history=32,16,8,4,2,1,0 --out "$T/base.safetensors"
t0=$SECONDS
"$PY" train/dataset.py --base "$T/base.safetensors" --out "$T/data" --garments tshirt --train-betas 1 --test-betas 1 \
    --motions walk --train-seeds 1 --test-seeds 1 --seconds 3 --drape "$B/drape" \
    --sim-args "--max-substeps 8 --max-disp 0.02 --iters 8" >/dev/null
echo "teacher: 3 T-shirt walks of 3 s (1 train, 2 test) in $((SECONDS - t0)) s"
runs=("cpu --threads 2" "cpu --threads $(nproc)")
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' && runs=("cuda" "${runs[@]}")
for r in "${runs[@]}"; do
    line=$("$PY" train/train.py fit --base "$T/base.safetensors" --data "$T/data" --out "$T/m.safetensors" \
        --steps "$STEPS" --frames 8 --lr 5e-4 --w-edge 0.1 --log-every 50 --device $r 2>&1 | grep ' s/step' | tail -1)
    echo "fit --device $r: ${line##*err }"
done
