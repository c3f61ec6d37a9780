#!/usr/bin/env bash
# Layouts, batches, model shapes and the crossover on this GPU: the GPU tests of those parts, then
# compare.py over NN/NT/TN/TT at 4096³ (bf16 v15, fp32 v11), batches of small products against torch.bmm,
# a --shapes set, and the crossover tool. Logs and JSON go to $GPU_LOG_DIR (default ./gpu-logs).
# PART=tests|layouts|batches|shapes|crossover runs one part (default: all).
#   GPU_LOG_DIR=/tmp/logs PART=layouts scripts/workloads_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
run() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }

if run tests; then
    python -m pytest -q -p no:cacheprovider tests/ladder/test_layouts.py tests/ladder/test_searches.py \
        tests/shared/test_shapes.py tests/shared/test_crossover.py 2>&1 | grep -v -i "benchmark" \
        | tail -n 15 | tee "$LOG_DIR/workloads_pytest.log" || status=1
fi
if run layouts; then
    for spec in "bf16 15" "fp32 11"; do
        set -- $spec
        python compare.py --dtype "$1" --rungs "$2" --layout nn,nt,tn,tt --sizes 4096 --impl cuda,triton,cublas \
            --json "$LOG_DIR/layouts_$1.json" >"$LOG_DIR/layouts_$1.log" 2>&1 || status=1
        grep -A8 "^4096x" "$LOG_DIR/layouts_$1.log" | grep -v "^--$" | head -n 40
    done
fi
if run batches; then
    for dtype in bf16 fp32; do
        rung=15; [ "$dtype" = fp32 ] && rung=11
        for case in 4096x64 1024x128 256x256 64x512; do
            python compare.py --dtype "$dtype" --rungs "$rung" --batch "${case%x*}" --sizes "${case#*x}" \
                --impl cuda,triton,cublas --json "$LOG_DIR/batch_${dtype}_$case.json" \
                >"$LOG_DIR/batch_${dtype}_$case.log" 2>&1 || status=1
            grep -A6 "^${case%x*}×" "$LOG_DIR/batch_${dtype}_$case.log" | head -n 7
        done
    done
fi
if run shapes; then
    python compare.py --dtype bf16 --rungs 15 --shapes "${SHAPES:-llama3-8b}" --impl cuda,triton,cublas \
        --json "$LOG_DIR/shapes.json" >"$LOG_DIR/shapes.log" 2>&1 || status=1
    tail -n 60 "$LOG_DIR/shapes.log"
fi
if run crossover; then
    python -m implementations.tools.crossover --out "$LOG_DIR/crossover" >"$LOG_DIR/crossover.log" 2>&1 || status=1
    tail -n 25 "$LOG_DIR/crossover.log"
fi
exit $status
