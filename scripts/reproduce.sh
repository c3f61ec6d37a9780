#!/usr/bin/env bash
# Re-run, on this GPU, the commands behind the published results in docs/results (each file there names the
# command in its environment block; docs/results/README.md says which table each one backs). Results go to
# $GPU_LOG_DIR (default ./gpu-logs) under the same names, without the device prefix. One part per call, each
# sized for a ten-minute slot:
#   scripts/reproduce.sh fp32          the fp32 ladder (3 rounds), the v10/v11 size sweep, Triton's knobs
#   scripts/reproduce.sh tensor-core   the bf16/fp16 ladders at 4096³ and 8192³ and tf32 at 4096³ (3 rounds),
#                                      the tf32 accuracy table
#   scripts/reproduce.sh teaching      the ladders with Nsight Compute, the plots and the lesson page
#   scripts/reproduce.sh sizes         TFLOP/s against size, the TILE exercise, compute-sanitizer, the race survey
set -uo pipefail
cd "$(dirname "$0")/.."
LOG=${GPU_LOG_DIR:-./gpu-logs}
PLOTS=$LOG/plots
mkdir -p "$PLOTS"
export PYTHONUNBUFFERED=1
status=0

compare() {  # compare NAME ARGS...: one compare.py run, its reports as $LOG/NAME.{json,md} and its output in NAME.log
    local name=$1
    shift
    echo "== $name: python compare.py $*"
    python compare.py "$@" --json "$LOG/$name.json" --markdown "$LOG/$name.md" >"$LOG/$name.log" 2>&1 \
        || { echo "   exit $?"; status=1; }
    tail -n 3 "$LOG/$name.log"
}

script() {  # script NAME COMMAND...: a script's output kept in $LOG/NAME
    local name=$1
    shift
    echo "== $name: $*"
    "$@" >"$LOG/$name" 2>&1 || { echo "   exit $?"; status=1; }
}

case "${1:-}" in
fp32)
    compare fp32_4096 --rungs 1-11 --rounds 3
    echo "== fp32_sweep: python compare.py --rungs 10,11 --sizes 256,...,8192 --csv"
    python compare.py --rungs 10,11 --sizes 256,512,1024,2048,3072,4096,6144,8192 --csv "$LOG/fp32_sweep.csv" \
        --markdown "$LOG/fp32_sweep.md" >"$LOG/fp32_sweep.log" 2>&1 || status=1
    script triton_knobs.txt python scripts/triton_knobs.py --size 4096 --out "$LOG/triton_knobs.md"
    ;;
tensor-core)
    for dtype in bf16 fp16; do
        compare "tc_$dtype" --dtype "$dtype" --rungs 12-16 --sizes 4096,8192 --rounds 3
    done
    compare tc_tf32 --dtype tf32 --rungs 12-16 --sizes 4096 --rounds 3
    script tf32_accuracy.txt python scripts/tf32_accuracy.py --size 4096
    ;;
teaching)
    compare ladder_fp32 --ncu --plots "$PLOTS" --lessons "$LOG/lessons"
    compare ladder_bf16 --dtype bf16 --rungs 12-15 --ncu --plots "$PLOTS"
    ;;
sizes)
    compare sizes_fp32 --rungs 10,11 --impl cuda,triton,cublas --sizes 256,512,1024,2048,4096,8192 --plots "$PLOTS"
    compare sizes_bf16 --dtype bf16 --rungs 14,15 --impl cuda,triton,cublas --sizes 256,512,1024,2048,4096 \
        --rounds 2 --plots "$PLOTS"
    compare tile_sweep --rungs 3 --sweep TILE=8,16,32,64 --sizes 1024,4096 --impl cuda,triton,cublas --plots "$PLOTS"
    script sanitize_racecheck.txt python compare.py --sanitize
    script sanitize_memcheck.txt python compare.py --sanitize memcheck --rungs 3,11
    script sanitize_memcheck_bf16.txt python compare.py --sanitize memcheck --rungs 14,15 --dtype bf16
    script race_survey.txt python scripts/race_survey.py
    ;;
*)
    echo "usage: $0 fp32|tensor-core|teaching|sizes" >&2
    exit 2
    ;;
esac
exit $status
