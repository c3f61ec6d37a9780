#!/usr/bin/env bash
# Every check that needs a GPU, in one go: the whole test suite (CPU and GPU tests, one worker per core),
# the fp32 and bf16 ladders at 4096³ from compare.py (cuBLAS in the same run), and compare.py over a kernel
# that faults and one that hangs between good rungs (tests/faults). Logs and results go to $GPU_LOG_DIR
# (default ./gpu-logs).
#   GPU_LOG_DIR=/tmp/logs scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0

{
    nvidia-smi
    python -c "import torch, triton, cupy; print('torch', torch.__version__, 'triton', triton.__version__, 'cupy', cupy.__version__)"
    nvcc --version | tail -1
} >"$LOG_DIR/env.txt" 2>&1

{ time python -m pytest -q -p no:cacheprovider --durations=25 ; } 2>&1 | tee "$LOG_DIR/pytest.log" || status=1
for dtype in fp32 bf16; do
    rungs=1-11
    [ "$dtype" = bf16 ] && rungs=12-15
    python compare.py --dtype "$dtype" --rungs "$rungs" --sizes 4096 --json "$LOG_DIR/ladder_$dtype.json" \
        >"$LOG_DIR/ladder_$dtype.log" 2>&1 || status=1
    tail -n 40 "$LOG_DIR/ladder_$dtype.log"
done
# Expected: fault and timeout for the CUDA C sides of v90 and v91, every other result ok, exit code 1.
python compare.py --rungs 1,2 --with tests.faults.v90_faulting,tests.faults.v91_hanging --sizes 256,512 \
    --impl cuda,triton,cublas --task-timeout 30 --json "$LOG_DIR/faults.json" >"$LOG_DIR/faults.log" 2>&1
echo "fault isolation: compare.py exit code $? (1 expected)" | tee -a "$LOG_DIR/faults.log"
tail -n 30 "$LOG_DIR/faults.log"
exit $status
