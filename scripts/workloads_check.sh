#!/usr/bin/env bash
# Layouts, batches, model shapes and the crossover on this GPU: the GPU tests of those parts, the layout
# copies (core/relayout.py: its tests, then small_probe.py --layout-copies), compare.py over NN/NT/TN/TT at
# 4096³ (bf16 v15, fp32 v11, tf32 v16), batches of small products against torch.bmm, --shapes sets, and the
# crossover tool. Logs and JSON go to $GPU_LOG_DIR (default ./gpu-logs).
# PART=tests|copies|layouts|batches|shapes|crossover runs one part (default: all); DTYPES (default "bf16 fp32
# tf32") the dtypes of the layouts and batches parts, ROUNDS (default 3) their interleaved rounds, FLUSH (zero or
# clean: compare.py --flush; clean suffixes the files "_clean") their L2 flush; SHAPES (default llama3-8b) the
# shape sets.
#   GPU_LOG_DIR=/tmp/logs PART=layouts DTYPES=bf16 scripts/workloads_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
DTYPES=${DTYPES:-bf16 fp32 tf32}
ROUNDS=${ROUNDS:-3}
FLUSH=${FLUSH:-zero}
SUFFIX=$([ "$FLUSH" = zero ] || echo "_$FLUSH")
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
run() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }
rung_of() { case "$1" in fp32) echo 11 ;; tf32) echo 16 ;; *) echo 15 ;; esac; }

if run tests; then
    python -m pytest -q -p no:cacheprovider tests/ladder/test_layouts.py tests/ladder/test_searches.py tests/rungs \
        tests/shared/test_shapes.py tests/shared/test_crossover.py 2>&1 | grep -v -i "benchmark" \
        | tail -n 15 | tee "$LOG_DIR/workloads_pytest.log" || status=1
fi
if run copies; then
    python -m pytest -q -p no:cacheprovider tests/shared/test_relayout.py 2>&1 | tail -n 5 \
        | tee "$LOG_DIR/copies_pytest.log" || status=1
    python scripts/small_probe.py --layout-copies --sizes 4096 --json "$LOG_DIR/copies_4096.json" || status=1
    python scripts/small_probe.py --layout-copies --sizes 512 --batch 64 --json "$LOG_DIR/copies_b64x512.json" \
        || status=1
fi
if run layouts; then
    for dtype in $DTYPES; do
        python compare.py --dtype "$dtype" --rungs "$(rung_of "$dtype")" --layout nn,nt,tn,tt --sizes 4096 \
            --rounds "$ROUNDS" --flush "$FLUSH" --impl cuda,triton,cublas --json "$LOG_DIR/layouts_$dtype$SUFFIX.json" \
            >"$LOG_DIR/layouts_$dtype$SUFFIX.log" 2>&1 || status=1
        grep -A8 "^4096x" "$LOG_DIR/layouts_$dtype$SUFFIX.log" | grep -v "^--$" | head -n 40
    done
fi
if run batches; then
    for dtype in $DTYPES; do
        for case in 4096x64 1024x128 256x256 64x512; do
            python compare.py --dtype "$dtype" --rungs "$(rung_of "$dtype")" --batch "${case%x*}" --sizes "${case#*x}" \
                --rounds "$ROUNDS" --flush "$FLUSH" --impl cuda,triton,cublas \
                --json "$LOG_DIR/batch_${dtype}_$case$SUFFIX.json" >"$LOG_DIR/batch_${dtype}_$case$SUFFIX.log" 2>&1 \
                || status=1
            grep -A6 "^${case%x*}×" "$LOG_DIR/batch_${dtype}_$case$SUFFIX.log" | head -n 7
        done
    done
fi
if run shapes; then
    for set in ${SHAPES:-llama3-8b}; do
        python compare.py --dtype bf16 --rungs 15 --shapes "$set" --impl cuda,triton,cublas \
            --json "$LOG_DIR/shapes_$set.json" >"$LOG_DIR/shapes_$set.log" 2>&1 || status=1
        tail -n 60 "$LOG_DIR/shapes_$set.log"
    done
fi
if run crossover; then
    python -m implementations.tools.crossover --out "$LOG_DIR/crossover" >"$LOG_DIR/crossover.log" 2>&1 || status=1
    tail -n 25 "$LOG_DIR/crossover.log"
fi
exit $status
