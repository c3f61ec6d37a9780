#!/usr/bin/env bash
# Issue 4 on a Hopper GPU in one call: the search probe, the GPU tests of the Hopper rungs, and the tf32
# ladder. Logs go to $OUT/hopper (one tarball, $OUT/hopper.tgz).
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
tar czf "$OUT/hopper.tgz" -C "$OUT" hopper && rm -rf "$LOG"
