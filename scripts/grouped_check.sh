#!/usr/bin/env bash
# The grouped GEMM (v18) on this GPU: its GPU tests and the shared layer's, then compare.py on both routings
# (ramp: 8 groups of 128 to 2560 rows, N = 2048, K = 4096; mixtral: 8 uneven groups of 8192 rows, N = 14336,
# K = 4096) for each dtype and B layout, v18 in both languages beside the loop of torch.matmul (the cuBLAS
# row), the same loop in a CUDA graph and torch._grouped_mm, 3 rounds pooled; timed with events, then again
# with every row in a CUDA graph (--timing graph). Logs, JSON and each run's tuning cache (the searches'
# per-candidate times) go to $GPU_LOG_DIR (default ./gpu-logs). PART=tests|compare runs one part (default: all);
# TESTS lists the test files; DTYPES, ROUTINGS, LAYOUTS and TIMINGS narrow the comparison.
#   GPU_LOG_DIR=/tmp/logs PART=compare DTYPES=bf16 ROUTINGS=ramp LAYOUTS=nn scripts/grouped_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
PART=${PART:-all}
DTYPES=${DTYPES:-bf16 fp16}
ROUTINGS=${ROUTINGS:-ramp mixtral}
LAYOUTS=${LAYOUTS:-nn nt}
TIMINGS=${TIMINGS:-events graph}
TESTS=${TESTS:-tests/rungs/test_v18.py tests/rungs/test_v15.py tests/rungs/test_v17.py tests/shared/test_groups.py}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0
run() { [ "$PART" = all ] || [ "$PART" = "$1" ]; }

if run tests; then
    # shellcheck disable=SC2086
    python -m pytest -q -p no:cacheprovider $TESTS -rf >"$LOG_DIR/grouped_pytest.log" 2>&1 || status=1
    grep -E "^(FAILED|ERROR)|passed|failed" "$LOG_DIR/grouped_pytest.log"
fi
if run compare; then
    for dtype in $DTYPES; do
        for routing in $ROUTINGS; do
            for layout in $LAYOUTS; do
                for timing in $TIMINGS; do
                    name="grouped_${dtype}_${routing}_${layout}_${timing}"
                    TVC_CACHE_DIR="$LOG_DIR/cache_$name" python compare.py --dtype "$dtype" --rungs 18 \
                        --groups "$routing" --layout "$layout" --timing "$timing" --rounds 3 \
                        --impl cuda,triton,cublas,grouped_mm,loop_graph --json "$LOG_DIR/$name.json" \
                        >"$LOG_DIR/$name.log" 2>&1 || status=1
                    echo "== $name"
                    grep -E -A8 "^[0-9]+x[0-9]+x[0-9]+ G=" "$LOG_DIR/$name.log" | head -n 12
                done
            done
        done
    done
fi
exit $status
