#!/usr/bin/env bash
# The tensor-core ladder on this GPU, in one go: compare.py for bf16 and fp16 at SIZES (default
# 4096,8192) and tf32 at TF32_SIZES (default 4096), each in the same run as cuBLAS at that precision;
# the tf32 accuracy table; and the survey of every tensor-core rung, dtype and v15/v16 candidate.
# Each size is timed in ROUNDS rounds (default 3; compare.py --rounds), so the GPU's clock drift is shared
# out among the implementations. Results (markdown, JSON, CSV, logs) go to $GPU_LOG_DIR (default ./gpu-logs).
#   GPU_LOG_DIR=/tmp/logs scripts/tensor_core_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
SIZES=${SIZES:-4096,8192}
TF32_SIZES=${TF32_SIZES:-4096}
RUNGS=${RUNGS:-12-16}
ROUNDS=${ROUNDS:-3}
DTYPES=${DTYPES:-bf16 fp16 tf32}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0

for dtype in $DTYPES; do
    sizes=$SIZES
    [ "$dtype" = tf32 ] && sizes=$TF32_SIZES
    python compare.py --dtype "$dtype" --rungs "$RUNGS" --sizes "$sizes" --rounds "$ROUNDS" \
        --csv "$LOG_DIR/tc_$dtype.csv" --json "$LOG_DIR/tc_$dtype.json" --markdown "$LOG_DIR/tc_$dtype.md" \
        >"$LOG_DIR/tc_$dtype.log" 2>&1 || status=1
done
if [[ " $DTYPES " == *" tf32 "* ]]; then
    python scripts/tf32_accuracy.py --size "${TF32_SIZES%%,*}" >"$LOG_DIR/tf32_accuracy.txt" 2>&1 || status=1
fi
[ "${SURVEY:-1}" = 1 ] && { python scripts/tensor_core_check.py >"$LOG_DIR/tc_check.log" 2>&1 || status=1; }
exit $status
