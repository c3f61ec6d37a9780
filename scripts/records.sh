#!/usr/bin/env bash
# The large-size records, in one go on one GPU: the best rung of each precision in both languages against
# cuBLAS in the same run, 3 interleaved rounds pooled (events timing, L2 flushed): fp8 v19 (nt) at 4096³ and
# 8192x8192x4096, bf16 v15 at 4096³ and 8192³, fp16 v15 at 4096³, fp32 v11 (TF32 off) at 4096³, tf32 v16 at
# 4096³ and 8192³. Logs and JSON go to $GPU_LOG_DIR (default ./gpu-logs), one document per precision
# (records_<dtype>.json); ONLY (a space-separated list of dtypes) runs some of them.
#   GPU_LOG_DIR=/tmp/logs ONLY="bf16 fp16" scripts/records.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
declare -A RUNG=([fp8]=19 [bf16]=15 [fp16]=15 [fp32]=11 [tf32]=16)
declare -A SIZES=([fp8]=4096,8192x8192x4096 [bf16]=4096,8192 [fp16]=4096 [fp32]=4096 [tf32]=4096,8192)
for dtype in ${ONLY:-fp8 bf16 fp16 fp32 tf32}; do
    python compare.py --dtype "$dtype" --rungs "${RUNG[$dtype]}" --sizes "${SIZES[$dtype]}" --impl cuda,triton,cublas \
        --rounds 3 --json "$LOG_DIR/records_$dtype.json" >"$LOG_DIR/records_$dtype.log" 2>&1 || status=1
    grep -E "^[0-9]|^cuBLAS|^v1" "$LOG_DIR/records_$dtype.log" | head -n 12
done
exit $status
