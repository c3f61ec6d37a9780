#!/usr/bin/env bash
# Nsight Compute's detail pages (speed of light, launch, occupancy, scheduler and warp-state statistics,
# memory workload) for each chosen launch, cuBLAS's included: what compare.py --ncu's one-line summary
# leaves out, for finding where a kernel's time goes. Clock control off. The launches are compare.py
# --ncu's (implementations/tools/profile.py's child, filtered by the rungs' kernel names), or with --probe
# every tile small_probe.py would time (its --profile: the candidates, --cuda and --triton, cuBLAS).
#   scripts/ncu_sections.sh --dtype bf16 --rungs 15 --sizes 1024 --impl cuda,triton,cublas > ncu.txt
#   scripts/ncu_sections.sh --probe --sizes 1024 --cuda "64,8,2,8" > ncu.txt
# NCU_ARGS adds options of ncu's own, e.g. NCU_ARGS="--cache-control none" to keep L2 warm between the
# replays (what a CUDA graph's back-to-back launches see) instead of flushing it before each.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --probe ]; then
    shift
    child=(python scripts/small_probe.py --profile "$@") filter=()
else
    regex=$(python - "$@" <<'PY'
import sys
from implementations.tools.profile import build_parser
from implementations.tools.ncu import kernel_regex
from implementations.core.registry import select
args = build_parser().parse_args(sys.argv[1:])
print(kernel_regex(args.rungs if args.rungs is not None else select(), args.impl))
PY
)
    child=(python -m implementations.tools.profile "$@") filter=(--kernel-name-base function --kernel-name "$regex")
fi
exec ncu --target-processes application-only --clock-control none ${NCU_ARGS:-} --nvtx --nvtx-include tvc/ "${filter[@]}" \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --print-details all "${child[@]}"
