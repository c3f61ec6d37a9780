#!/usr/bin/env bash
# Every check that needs a GPU, in one go: the whole test suite (CPU and GPU tests), the race survey,
# and the ladder from compare.py. Logs and results go to $GPU_LOG_DIR (default ./gpu-logs).
#   GPU_LOG_DIR=/tmp/logs SIZES=4096 scripts/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
SIZES=${SIZES:-4096}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0

{
    nvidia-smi
    python -c "import torch, triton, cupy; print('torch', torch.__version__, 'triton', triton.__version__, 'cupy', cupy.__version__)"
    nvcc --version | tail -1
} >"$LOG_DIR/env.txt" 2>&1

python -m pytest -q -ra 2>&1 | tee "$LOG_DIR/pytest.log" || status=1
python scripts/race_survey.py 2>&1 | tee "$LOG_DIR/race.log" || status=1
python compare.py --sizes "$SIZES" --csv "$LOG_DIR/ladder.csv" --json "$LOG_DIR/ladder.json" \
    --markdown "$LOG_DIR/ladder.md" 2>&1 | tee "$LOG_DIR/compare.log" || status=1
exit $status
