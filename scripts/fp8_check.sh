#!/usr/bin/env bash
# The fp8 rung (v19) on this GPU: its GPU tests (and v15's, whose kernel it instantiates), then compare.py at
# 4096³, 8192x8192x4096 and 8192³ in nt (both operands K-major, what fp8 wgmma and cuBLASLt read), v19 in both
# languages beside torch._scaled_mm, 3 rounds pooled. Logs and JSON go to $GPU_LOG_DIR (default ./gpu-logs).
# PART=tests|regress|compare runs one part (default: all); DTYPE (fp8, or fp8-rowwise: per-row scales), SIZES,
# TIMING and NAME (of the files) change the comparison.
#   GPU_LOG_DIR=/tmp/logs PART=compare DTYPE=fp8-rowwise TIMING=graph scripts/fp8_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
SIZES=${SIZES:-4096,8192x8192x4096,8192}
TIMING=${TIMING:-events}
DTYPE=${DTYPE:-fp8}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
run() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }

if run tests; then
    python -m pytest -q -p no:cacheprovider -m gpu tests/rungs/test_v19.py tests/ladder/test_rungs.py \
        tests/ladder/test_layouts.py tests/ladder/test_searches.py tests/ladder/test_large_shapes.py -k "v19 or fp8" \
        2>&1 | tail -n 25 | tee "$LOG_DIR/fp8_pytest.log" || status=1
fi
if run regress; then
    python -m pytest -q -p no:cacheprovider -m gpu tests/rungs/test_v15.py tests/rungs/test_v17.py tests/rungs/test_v18.py \
        2>&1 | tail -n 15 | tee "$LOG_DIR/fp8_v15_pytest.log" || status=1
fi
if run compare; then
    name=${NAME:-${DTYPE}_${TIMING}}
    python compare.py --dtype "$DTYPE" --rungs 19 --rounds 3 --sizes "$SIZES" --timing "$TIMING" \
        --json "$LOG_DIR/$name.json" --markdown "$LOG_DIR/$name.md" >"$LOG_DIR/$name.log" 2>&1 || status=1
    tail -n 40 "$LOG_DIR/$name.log"
fi
exit $status
