#!/usr/bin/env bash
# The fp32 ladder's evidence on a GPU, in one go (results to $GPU_LOG_DIR, default ./gpu-logs):
# - Triton's knobs off and on (scripts/triton_knobs.py);
# - Nsight Compute on rungs 6-11, both languages, at $SIZE³: speed of light, FMA pipe and issue
#   utilisation, occupancy, DRAM bytes, shared-memory wavefronts and bank conflicts per launch;
# - a size sweep of the best rungs against cuBLAS ($SWEEP, or none), written to sweep.csv.
#   GPU_LOG_DIR=/tmp/logs SIZE=4096 scripts/fp32_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR=${GPU_LOG_DIR:-./gpu-logs}
SIZE=${SIZE:-4096}
SWEEP=${SWEEP:-256,512,1024,2048,3072,4096,6144,8192}
BEST=${BEST:-10,11}
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
status=0

python scripts/triton_knobs.py --size "$SIZE" --out "$LOG_DIR/triton_knobs.md" 2>&1 | tee "$LOG_DIR/triton_knobs.log" || status=1

METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,\
sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,sm__cycles_elapsed.avg.per_second,\
smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
if command -v ncu >/dev/null; then
    # Clock control off: the kernels run at the clocks they would get outside the profiler.
    ncu --clock-control none --nvtx --nvtx-include "tvc/" --metrics "$METRICS" --csv --page raw \
        --log-file "$LOG_DIR/ncu.csv" \
        python -m implementations._profile --rungs 6-11 --impl cublas,cuda,triton --sizes "$SIZE" \
        >"$LOG_DIR/ncu_order.txt" 2>&1 || status=1
    python scripts/ncu_table.py "$LOG_DIR/ncu.csv" --labels "$LOG_DIR/ncu_order.txt" \
        | tee "$LOG_DIR/ncu.md" || status=1
    # Where the best rungs' warps wait, beside cuBLAS: stall reasons per issued instruction.
    STALLS=smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
    for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected \
             dispatch_stall no_instruction branch_resolving; do
        STALLS=$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
    done
    ncu --clock-control none --nvtx --nvtx-include "tvc/" --metrics "$STALLS" --csv --page raw \
        --log-file "$LOG_DIR/ncu_stalls.csv" \
        python -m implementations._profile --rungs "${BEST##*,}" --impl cublas,cuda,triton --sizes "$SIZE" \
        >"$LOG_DIR/ncu_stalls_order.txt" 2>&1 || status=1
    python scripts/ncu_table.py "$LOG_DIR/ncu_stalls.csv" --labels "$LOG_DIR/ncu_stalls_order.txt" \
        | tee "$LOG_DIR/ncu_stalls.md" || status=1
else
    echo "ncu not found: no Nsight Compute figures" | tee "$LOG_DIR/ncu.md"
fi

[ "$SWEEP" = none ] || python compare.py --rungs "$BEST" --sizes "$SWEEP" --csv "$LOG_DIR/sweep.csv" --markdown "$LOG_DIR/sweep.md" \
    2>&1 | tee "$LOG_DIR/sweep.log" || status=1
exit $status
