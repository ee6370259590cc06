#!/bin/bash
# `make gpu-check`'s load step: draped on the CUDA backend with MODEL, then
# `drape load` at AVATARS avatars x FPS for SECONDS (the goal: 1,000 x 30,
# p99 <= 10 ms, none dropped); prints drape load's JSON report last.
#
#   bench/gpu_load.sh BUILD MODEL [AVATARS] [FPS] [SECONDS]
#   env: GPU_LOAD_PRECISION (default fp16), GPU_LOAD_CONNECTIONS (default 8:
#        draped takes at most 256 avatars per stream), GPU_LOAD_FORMAT (q16),
#        GPU_LOAD_MAX_BATCH (default 128), GPU_LOAD_MAX_DELAY_US (default 1000)
#
# draped's batch at most 128 frames: the refine step runs a frame per SM
# (1024-thread blocks), so a batch of up to the SM count (132 on an H200)
# takes one wave of about 2 ms; at 256 a batch of ~160 took two waves, 7 ms
# a batch and p99 24.6 ms (2026-12-04). docs/server.md says the same to
# users.
set -u
B=${1:?build folder}
MODEL=${2:?model bundle}
AVATARS=${3:-1000}
FPS=${4:-30}
SECONDS_=${5:-10}
PREC=${GPU_LOAD_PRECISION:-fp16}
CONNS=${GPU_LOAD_CONNECTIONS:-8}
FORMAT=${GPU_LOAD_FORMAT:-q16}
MAX_BATCH=${GPU_LOAD_MAX_BATCH:-128}
MAX_DELAY=${GPU_LOAD_MAX_DELAY_US:-1000}
LOG=$(mktemp)
GARMENT=$("${DRAPE_PYTHON:-python3}" - "$MODEL" 2>/dev/null <<'EOF'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    meta = json.loads(f.read(n))["__metadata__"]
print(json.loads(meta["drape.config"])["garments"][0])
EOF
)
GARMENT=${GARMENT:-skirt}

"$B/draped" --port 0 --bind 127.0.0.1 --model "$MODEL" --backend cuda --precision "$PREC" \
    --max-batch "$MAX_BATCH" --max-delay-us "$MAX_DELAY" --log-level debug >"$LOG" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -f "$LOG"' EXIT
PORT=
for _ in $(seq 1 300); do
    # draped prints "draped: listening on http://ADDR:PORT" on stdout at any log level
    PORT=$(sed -n 's/.*listening on [a-z]*:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$LOG" | head -1)
    [ -n "$PORT" ] && break
    kill -0 $PID 2>/dev/null || break
    sleep 0.1
done
if [ -z "$PORT" ]; then
    echo "gpu_load: draped did not start:"
    cat "$LOG"
    exit 1
fi
echo "draped on :$PORT (cuda, $PREC, --max-batch $MAX_BATCH --max-delay-us $MAX_DELAY), $MODEL, garment $GARMENT; $AVATARS avatars x $FPS fps for $SECONDS_ s over $CONNS connections ($FORMAT)"
# warm: the identity and the batch shapes' graphs
"$B/drape" load --url "ws://127.0.0.1:$PORT/v1/stream" --avatars "$CONNS" --connections "$CONNS" --fps 30 \
    --duration 2 --garment "$GARMENT" --format "$FORMAT" >/dev/null || true
REPORT=$("$B/drape" load --url "ws://127.0.0.1:$PORT/v1/stream" --avatars "$AVATARS" --connections "$CONNS" --fps "$FPS" \
    --duration "$SECONDS_" --garment "$GARMENT" --format "$FORMAT" --json)
rc=$?
# where a frame's time went, from draped's own histograms (both runs above)
curl -s "http://127.0.0.1:$PORT/metrics" | awk '
    /^drape_frame_[a-z]*_seconds_(sum|count) / { split($1, k, "_seconds_"); v[k[1] "_" k[2]] = $2 }
    /^drape_batches_total / { nb = $2 } /^drape_batch_frames_total / { nf = $2 }
    END {
        printf "draped: %d batches, %.1f frames per batch;", nb, nb ? nf / nb : 0
        n = split("queue compute pack server", s, " ")
        for (i = 1; i <= n; i++) { c = v["drape_frame_" s[i] "_count"]
            printf " %s %.3f ms", s[i], c ? 1e3 * v["drape_frame_" s[i] "_sum"] / c : 0 }
        printf " (means per frame)\n" }'
# a batch shape is captured as a CUDA graph once, then replayed
CAPS=$(grep -c 'captured batch shape' "$LOG")
LONGEST=$(sed -n 's/.*captured batch shape.* in \([0-9.]*\) ms.*/\1/p' "$LOG" | sort -g | tail -1)
echo "draped: $CAPS batch shapes captured${LONGEST:+ (the longest capture $LONGEST ms)}"
echo "$REPORT"
exit $rc
