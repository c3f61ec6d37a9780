#!/usr/bin/env bash
# The evidence for the README's plots, lessons, Nsight Compute and compute-sanitizer sections, on a GPU.
# One compare.py invocation per feature; results to $GPU_LOG_DIR (default ./gpu-logs). Two parts, so that
# each fits in a ten-minute slot:
#   scripts/teaching_evidence.sh 1   the fp32 ladder (CPU baseline, --ncu, --lessons), the bf16 tensor-core
#                                    ladder (--ncu); plots
#   scripts/teaching_evidence.sh 2   TFLOP/s against size (fp32 and bf16), the tile-size exercise (--sweep
#                                    TILE=8,16,32,64), --sanitize (racecheck, memcheck)
# The committed lesson page joins the saved fp32 and bf16 results:
#   python -m implementations._lessons --out docs --results docs/results/h100_ladder_*.json --images docs/plots/*.png
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${GPU_LOG_DIR:-./gpu-logs}
PLOTS=$LOG/plots
SIZES=${SIZES:-256,512,1024,2048,4096,8192}
mkdir -p "$PLOTS"
export PYTHONUNBUFFERED=1
status=0

run() {  # run NAME LIMIT_S ARGS...: one compare.py invocation, its output kept in $LOG/NAME.txt
    local name=$1 limit=$2
    shift 2
    echo "== $name: python compare.py $*"
    timeout "$limit" python compare.py "$@" >"$LOG/$name.txt" 2>"$LOG/$name.err" || { echo "   exit $?"; status=1; }
    tail -n 3 "$LOG/$name.txt"
}

case "${1:-1}" in
1)
    run ladder_fp32 300 --ncu --json "$LOG/ladder_fp32.json" --markdown "$LOG/ladder_fp32.md" --plots "$PLOTS" \
        --lessons "$LOG/lessons"
    run ladder_bf16 200 --dtype bf16 --rungs 12-15 --ncu --json "$LOG/ladder_bf16.json" \
        --markdown "$LOG/ladder_bf16.md" --plots "$PLOTS"
    ;;
2)
    run sizes_fp32 150 --rungs 10,11 --impl cuda,triton,cublas --sizes "$SIZES" --json "$LOG/sizes_fp32.json" \
        --markdown "$LOG/sizes_fp32.md" --plots "$PLOTS"
    run sizes_bf16 150 --dtype bf16 --rungs 14,15 --impl cuda,triton,cublas --sizes "$SIZES" \
        --json "$LOG/sizes_bf16.json" --markdown "$LOG/sizes_bf16.md" --plots "$PLOTS"
    run tile_sweep 80 --rungs 3 --sweep TILE=8,16,32,64 --sizes 1024,4096 --impl cuda,triton,cublas \
        --json "$LOG/tile_sweep.json" --markdown "$LOG/tile_sweep.md" --plots "$PLOTS"
    run sanitize_racecheck 120 --sanitize --markdown "$LOG/sanitize_racecheck.md"
    run sanitize_memcheck 120 --sanitize memcheck --rungs 3,11 --markdown "$LOG/sanitize_memcheck.md"
    run sanitize_memcheck_bf16 120 --sanitize memcheck --rungs 14,15 --dtype bf16 \
        --markdown "$LOG/sanitize_memcheck_bf16.md"
    ;;
*)
    echo "usage: $0 1|2" >&2
    exit 2
    ;;
esac
exit $status
