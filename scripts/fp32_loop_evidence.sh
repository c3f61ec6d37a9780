#!/usr/bin/env bash
# v10/v11's fp32 kernels on a GPU in one call: their GPU tests (PYTEST=0 leaves them out, PYTEST_K picks
# others), the interleaved probe of $TILES from the working tree and from each of $SOURCES (label=dir;...;
# see scripts/fp32_loop_probe.py), of the Gluon tiles $GLUON (each with each of $GLUON_KNOBS, and from each
# v11 module of $GLUON_SOURCES, label=file;...) and, with TRITON=1, v11's Triton launch against cuBLAS,
# with SANITIZE=1 compute-sanitizer's memcheck over the Gluon tiles on a ragged and an even shape,
# compare.py's fp32 rows of $RUNGS (default 10,11; COMPARE=0 leaves them out) at 4096³ and, with $SWEEP
# (sizes), of rungs 10-11 over those sizes to CSV, Nsight Compute's stall reasons for v10 and v11 CUDA C
# beside cuBLAS (NCU=0), with NCU_GLUON=1 for cuBLAS, the first tile of $TILES and the Gluon tiles, and,
# with NCU_SOURCE=1, the stall samples per SASS instruction of the first Gluon tile, or without $GLUON the
# first tile of $TILES from the working tree. One tarball, $OUT/fp32_loop.tgz.
#   git archive HEAD kernels_cuda | tar -x -C build/baseline   # before a change, on the CPU machine
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG=$OUT/fp32_loop
mkdir -p "$LOG"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >"$LOG/gpu.txt" 2>&1
if [ "${PYTEST:-1}" = 1 ]; then
    timeout 300 python -m pytest -q -ra tests/test_gpu.py \
        -k "${PYTEST_K:-v10_warptiling-cuda or v11_autotuned-cuda or cuda_autotune or float4_path or autotuned_rungs}" \
        >"$LOG/pytest.log" 2>&1
    echo "pytest rc=$?" >>"$LOG/pytest.log"
fi
TILES=${TILES:-128,256,8,64,64,3,16;128,128,8,32,64,3,8}
timeout 300 python scripts/fp32_loop_probe.py --sources "${SOURCES:-}" --tiles "$TILES" --gluon "${GLUON:-}" \
    --gluon-knobs "${GLUON_KNOBS:-}" --gluon-sources "${GLUON_SOURCES:-}" ${TRITON:+--triton} \
    --sizes "${SIZES:-4096,1000x1100x1028}" --rounds "${ROUNDS:-3}" >"$LOG/probe.log" 2>&1
echo "probe rc=$?" >>"$LOG/probe.log"
if [ "${SANITIZE:-0}" = 1 ]; then
    timeout 300 compute-sanitizer --tool memcheck python scripts/fp32_loop_probe.py --tiles "" --gluon "${GLUON:-}" \
        --sizes 1000x1100x1028,512x768x264 --rounds 0 >"$LOG/memcheck.log" 2>&1
    echo "memcheck rc=$?" >>"$LOG/memcheck.log"
fi
if [ "${COMPARE:-1}" = 1 ]; then
    timeout 300 python compare.py --rungs "${RUNGS:-10,11}" --sizes 4096 --rounds 3 --json "$LOG/fp32.json" \
        --markdown "$LOG/fp32.md" >"$LOG/fp32.log" 2>&1
    echo "compare rc=$?" >>"$LOG/fp32.log"
fi
if [ -n "${SWEEP:-}" ]; then
    timeout 300 python compare.py --rungs 10,11 --sizes "$SWEEP" --csv "$LOG/sweep.csv" --markdown "$LOG/sweep.md" \
        >"$LOG/sweep.log" 2>&1
    echo "sweep rc=$?" >>"$LOG/sweep.log"
fi
STALLS=smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
for r in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected \
         dispatch_stall no_instruction branch_resolving; do
    STALLS=$STALLS,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
if [ "${NCU:-1}" = 1 ]; then
    timeout 240 ncu --clock-control none --nvtx --nvtx-include "tvc/" --metrics "gpu__time_duration.sum,$STALLS" \
        --csv --page raw --log-file "$LOG/ncu_stalls.csv" \
        python -m implementations._profile --rungs 10,11 --impl cublas,cuda --sizes 4096 \
        >"$LOG/ncu_stalls_order.txt" 2>&1
    echo "ncu rc=$?" >>"$LOG/ncu_stalls_order.txt"
    python scripts/ncu_table.py "$LOG/ncu_stalls.csv" --labels "$LOG/ncu_stalls_order.txt" >"$LOG/ncu_stalls.md" 2>&1
fi
if [ "${NCU_GLUON:-0}" = 1 ]; then  # the same stall reasons and shared-memory counts for cuBLAS, the first CUDA
    # tile and each Gluon tile with each knob set, in the probe's order
    SMEM=smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
    SMEM=$SMEM,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
    timeout 240 ncu --clock-control none -k regex:"gemm|autotuned|gluon" \
        --metrics "gpu__time_duration.sum,$STALLS,$SMEM" --csv --page raw --log-file "$LOG/ncu_gluon.csv" \
        python scripts/fp32_loop_probe.py --tiles "${TILES%%;*}" --gluon "${GLUON:-}" \
        --gluon-knobs "${GLUON_KNOBS:-}" \
        --gluon-sources "${GLUON_SOURCES:-}" --sizes 4096 --rounds 0 >"$LOG/ncu_gluon.log" 2>&1
    echo "ncu rc=$?" >>"$LOG/ncu_gluon.log"
    python scripts/ncu_table.py "$LOG/ncu_gluon.csv" >"$LOG/ncu_gluon.md" 2>&1
fi
if [ "${NCU_SOURCE:-0}" = 1 ]; then  # the first Gluon tile with the first knob set if $GLUON is set, else the
    # first CUDA tile
    if [ -n "${GLUON:-}" ]; then
        KNOBS=${GLUON_KNOBS:-}
        WHAT=(-k regex:gluon) ARGS=(--tiles "" --gluon "${GLUON%%;*}" --gluon-knobs "${KNOBS%%;*}")
    else
        WHAT=(-k regex:autotuned) ARGS=(--tiles "${TILES%%;*}")
    fi
    timeout 150 ncu --clock-control none "${WHAT[@]}" --launch-count 1 --section WarpStateStats \
        --section SourceCounters -o "$LOG/source" \
        python scripts/fp32_loop_probe.py "${ARGS[@]}" --sizes 4096 --rounds 0 >"$LOG/source.log" 2>&1
    ncu --import "$LOG/source.ncu-rep" --page source --csv --print-source sass >"$LOG/source_sass.csv" 2>>"$LOG/source.log"
    echo "ncu source rc=$?" >>"$LOG/source.log"
fi
tar czf "$OUT/fp32_loop.tgz" -C "$OUT" fp32_loop && rm -rf "$LOG"
