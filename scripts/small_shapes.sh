#!/usr/bin/env bash
# The shapes users run, against cuBLAS in the same run: small squares, decode and skinny products, ragged
# and model-sized ones (bf16 v15; fp32 v11 with TF32 off), in graph timing (kernel time, no launch cost)
# and in events timing (launch included, L2 flushed). Logs and JSON go to $GPU_LOG_DIR (default
# ./gpu-logs); TIMINGS (default "graph events") and DTYPES (default "bf16 fp32") pick the runs.
#   GPU_LOG_DIR=/tmp/logs TIMINGS=graph DTYPES=bf16 scripts/small_shapes.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
for dtype in ${DTYPES:-bf16 fp32}; do
    if [ "$dtype" = fp32 ]; then
        rung=11 sizes=1000x1100x1028,257x4099x129,1024
    else
        rung=15 sizes=256,512,1024,2048,16x4096x4096,128x8192x8192,3000x5000x7000,8192x14336x4096
    fi
    for timing in ${TIMINGS:-graph events}; do
        python compare.py --dtype "$dtype" --rungs "$rung" --sizes "$sizes" --impl cuda,triton,cublas \
            --timing "$timing" --json "$LOG_DIR/small_${dtype}_$timing.json" >"$LOG_DIR/small_${dtype}_$timing.log" 2>&1 \
            || status=1
        grep -E "^[0-9]|^cuBLAS|^v1" "$LOG_DIR/small_${dtype}_$timing.log" | head -n 40
    done
done
exit $status
