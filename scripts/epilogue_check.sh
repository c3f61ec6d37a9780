#!/usr/bin/env bash
# The fused epilogue (v17) on this GPU: its GPU tests and the shared layer's, then compare.py for each dtype
# and epilogue at 8192x8192x4096, 4096³ and 16x4096x4096, v17 in both languages beside cuBLAS with the
# epilogue fused (torch.addmm / torch._addmm_activation) and torch's unfused sequence, 3 rounds pooled.
# Logs and JSON go to $GPU_LOG_DIR (default ./gpu-logs). PART=tests|compare runs one part (default: all);
# DTYPES and EPILOGUES narrow the comparison, SIZES replaces its sizes and TIMING=graph times in CUDA graphs.
#   GPU_LOG_DIR=/tmp/logs PART=compare DTYPES=bf16 EPILOGUES=bias+gelu scripts/epilogue_check.sh
#   PART=compare DTYPES=bf16 EPILOGUES="bias bias+gelu" SIZES=16x4096x4096,1x4096x4096 TIMING=graph scripts/epilogue_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
DTYPES=${DTYPES:-bf16 fp16}
EPILOGUES=${EPILOGUES:-bias bias+relu bias+gelu}
SIZES=${SIZES:-8192x8192x4096,4096,16x4096x4096}
TIMING=${TIMING:-events}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
run() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }

if run tests; then
    python -m pytest -q -p no:cacheprovider tests/rungs/test_v17.py tests/rungs/test_v15.py tests/shared/test_epilogues.py \
        2>&1 | tail -n 15 | tee "$LOG_DIR/epilogue_pytest.log" || status=1
fi
if run compare; then
    for dtype in $DTYPES; do
        for epilogue in $EPILOGUES; do
            name="epilogue_${dtype}_${epilogue/+/_}_${TIMING}"
            python compare.py --dtype "$dtype" --rungs 17 --epilogue "none,$epilogue" --rounds 3 \
                --sizes "$SIZES" --impl cuda,triton,cublas,unfused --timing "$TIMING" \
                --json "$LOG_DIR/$name.json" >"$LOG_DIR/$name.log" 2>&1 || status=1
            grep -E -A8 "^[0-9]+x[0-9]+x[0-9]+ " "$LOG_DIR/$name.log" | grep -v "^--$" | head -n 60
        done
    done
fi
exit $status
