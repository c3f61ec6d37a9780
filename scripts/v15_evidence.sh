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
timeout 240 python scripts/v15_tile_probe.py --sizes "${SIZES:-4096,8192}" --rounds "${ROUNDS:-5}" --tiles "$TILES" --l2-promotions "${L2_PROMOTIONS:-256}" \
    >"$LOG/probe.log" 2>&1
echo "probe rc=$?" >>"$LOG/probe.log"
if [ "${NCU:-1}" = 1 ]; then
    timeout 150 ncu --target-processes application-only --clock-control none -k regex:"warp_specialized|nvjet" \
        --launch-count 6 --csv --page raw --section SpeedOfLight --metrics dram__bytes_read.sum,\
dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__inst_executed.sum \
        python scripts/v15_tile_probe.py --sizes 4096 --dtypes bf16 --rounds 0 --tiles "$TILES" --l2-promotions "${L2_PROMOTIONS:-256}" \
        >"$LOG/ncu.csv" 2>"$LOG/ncu.err"
    echo "ncu rc=$?" >>"$LOG/ncu.err"
fi
# NCU_MEMORY=1: Nsight Compute's memory-workload sections for one launch of cuBLAS and of each tile at
# 4096³ bf16, as text (their summary and rule findings; the tables themselves need --print-details).
# Both Nsight Compute steps profile the first 6 launches: cuBLAS and at most 5 tiles × L2 promotions.
if [ "${NCU_MEMORY:-0}" = 1 ]; then
    timeout 200 ncu --target-processes application-only --clock-control none -k regex:"warp_specialized|nvjet" \
        --launch-count 6 --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
        --section SpeedOfLight --page details \
        python scripts/v15_tile_probe.py --sizes 4096 --dtypes bf16 --rounds 0 --tiles "$TILES" --l2-promotions "${L2_PROMOTIONS:-256}" \
        >"$LOG/ncu_memory.txt" 2>"$LOG/ncu_memory.err"
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
