#!/usr/bin/env bash
# v15's stream-K tail on a Hopper GPU in one call: its GPU tests, the interleaved probe against cuBLAS
# and the whole-tile kernel, and compare.py's v15 rows (whose search now includes it). One tarball,
# $OUT/stream_k.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG=$OUT/stream_k
mkdir -p "$LOG"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >"$LOG/gpu.txt" 2>&1
timeout 300 python -m pytest -q -ra tests/test_gpu.py -k "stream_k or (hopper_searches and v15 and cuda)" \
    >"$LOG/pytest.log" 2>&1
echo "pytest rc=$?" >>"$LOG/pytest.log"
timeout 240 python scripts/v15_tile_probe.py --sizes "${SIZES:-4096,8192}" --rounds "${ROUNDS:-5}" \
    >"$LOG/probe.log" 2>&1
echo "probe rc=$?" >>"$LOG/probe.log"
# One launch of each at 4096³ bf16 under Nsight Compute: DRAM bytes and L2 hits (NCU=0 leaves it out).
if [ "${NCU:-1}" = 1 ]; then
    timeout 150 ncu --target-processes application-only --clock-control none -k regex:"warp_specialized|nvjet" \
        --launch-count 4 --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,\
dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,\
sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max \
        python scripts/v15_tile_probe.py --sizes 4096 --dtypes bf16 --rounds 0 >"$LOG/ncu.csv" 2>"$LOG/ncu.err"
    echo "ncu rc=$?" >>"$LOG/ncu.err"
fi
if [ "${COMPARE:-1}" = 1 ]; then
    for dtype in bf16 fp16; do
        timeout 150 python compare.py --dtype $dtype --rungs 15 --sizes 4096,8192 --rounds 3 \
            --json "$LOG/tc_$dtype.json" --markdown "$LOG/tc_$dtype.md" >"$LOG/tc_$dtype.log" 2>&1
        echo "compare rc=$?" >>"$LOG/tc_$dtype.log"
    done
fi
tar czf "$OUT/stream_k.tgz" -C "$OUT" stream_k && rm -rf "$LOG"
