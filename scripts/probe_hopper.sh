#!/usr/bin/env bash
# Issue 4 on a Hopper GPU in one call: the search probe, the GPU tests of the Hopper rungs, the tf32
# ladder and (BF16=1, the default) the bf16 ladder of v14-v15 at 4096 and 8192. Logs go to $OUT/hopper (one tarball, $OUT/hopper.tgz).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=. PYTHONUNBUFFERED=1
LOG=$OUT/hopper
mkdir -p "$LOG"
timeout 200 python scripts/probe_hopper.py --extra ${PROBE_SIZES:+--sizes $PROBE_SIZES} >"$LOG/probe.log" 2>&1
echo "probe rc=$?" >>"$LOG/probe.log"
timeout 240 python -m pytest -q -ra tests/test_gpu.py tests/test_rungs.py -k "v14 or v15 or v16 or hopper" \
    >"$LOG/pytest.log" 2>&1
echo "pytest rc=$?" >>"$LOG/pytest.log"
timeout 120 python compare.py --dtype tf32 --rungs 13,16 --sizes 4096 --json "$LOG/tf32.json" \
    --markdown "$LOG/tf32.md" >"$LOG/tf32.log" 2>&1
echo "compare rc=$?" >>"$LOG/tf32.log"
if [ "${BF16:-1}" = 1 ]; then
    timeout 200 python compare.py --dtype bf16 --rungs 14,15 --sizes 4096,8192 --json "$LOG/bf16.json" \
        --markdown "$LOG/bf16.md" >"$LOG/bf16.log" 2>&1
    echo "compare rc=$?" >>"$LOG/bf16.log"
fi
tar czf "$OUT/hopper.tgz" -C "$OUT" hopper && rm -rf "$LOG"
