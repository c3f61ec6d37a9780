#!/usr/bin/env bash
# v15 CUDA C on a Hopper GPU in one call: its GPU tests (PYTEST_K selects them), the interleaved probe of
# chosen tiles against cuBLAS (TILES and L2_PROMOTIONS, as v15_tile_probe.py's --tiles and
# --l2-promotions; SIZES, ROUNDS), one launch of each under Nsight Compute at 4096³ bf16 (NCU=0 leaves it
# out; NCU_MEMORY=1 adds the memory tables) and compare.py's v15 rows for bf16 and fp16 (COMPARE=0 leaves
# them out). One tarball, $OUT/v15.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG=${OUT:?set OUT to the folder for the tarball}/v15
mkdir -p "$LOG"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >"$LOG/gpu.txt" 2>&1
TILES=${TILES:-"whole tiles=256,4,2,8,0;stream-K=256,4,2,8,1"}
timeout 300 python -m pytest -q -ra tests/test_gpu.py -k "${PYTEST_K:-v15}" >"$LOG/pytest.log" 2>&1
echo "pytest rc=$?" >>"$LOG/pytest.log"
PROBE=(python scripts/v15_tile_probe.py --tiles "$TILES" --l2-promotions "${L2_PROMOTIONS:-256}")
timeout 240 "${PROBE[@]}" --sizes "${SIZES:-4096,8192}" --rounds "${ROUNDS:-5}" >"$LOG/probe.log" 2>&1
echo "probe rc=$?" >>"$LOG/probe.log"
# Both Nsight Compute steps profile the first 6 launches at 4096³ bf16: cuBLAS and at most 5 tiles × L2
# promotions. NCU_MEMORY=1: the memory-workload sections as text (their summary and rule findings; the
# tables themselves need --print-details).
NCU_RUN=(ncu --target-processes application-only --clock-control none -k regex:"warp_specialized|nvjet"
         --launch-count 6)
PROBE_4096=("${PROBE[@]}" --sizes 4096 --dtypes bf16 --rounds 0)
if [ "${NCU:-1}" = 1 ]; then
    timeout 150 "${NCU_RUN[@]}" --csv --page raw --section SpeedOfLight --metrics dram__bytes_read.sum,\
dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
        "${PROBE_4096[@]}" >"$LOG/ncu.csv" 2>"$LOG/ncu.err"
    echo "ncu rc=$?" >>"$LOG/ncu.err"
fi
if [ "${NCU_MEMORY:-0}" = 1 ]; then
    timeout 200 "${NCU_RUN[@]}" --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
        --section SpeedOfLight --page details "${PROBE_4096[@]}" >"$LOG/ncu_memory.txt" 2>"$LOG/ncu_memory.err"
    echo "ncu rc=$?" >>"$LOG/ncu_memory.err"
fi
if [ "${COMPARE:-1}" = 1 ]; then
    for dtype in bf16 fp16; do
        timeout 150 python compare.py --dtype $dtype --rungs 15 --sizes 4096,8192 --rounds 3 \
            --json "$LOG/tc_$dtype.json" --markdown "$LOG/tc_$dtype.md" >"$LOG/tc_$dtype.log" 2>&1
        echo "compare rc=$?" >>"$LOG/tc_$dtype.log"
    done
fi
tar czf "$OUT/v15.tgz" -C "$OUT" v15 && rm -rf "$LOG"
