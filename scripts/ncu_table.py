"""Nsight Compute's raw CSV (ncu --csv --page raw) as one Markdown row per profiled launch.

    python scripts/ncu_table.py ncu.csv --labels order.txt
`--labels`: the output of `python -m implementations.tools.profile`, whose "profiled i: {...}" lines name
the rows in launch order (one kernel per launch: the fp32 rungs and cuBLAS's fp32 GEMM). For any
metric list, keyed by each kernel's NVTX range, `compare.py --ncu` (implementations/ncu.py) is the tool.
"""

import argparse
import csv
import sys
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from implementations.tools.profile import describe, read_child_output  # noqa: E402

SHORT = {
    "gpu__time_duration.sum": "time",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM %",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory %",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "FMA pipe %",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue active %",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "dram__bytes_read.sum": "DRAM read",
    "sm__cycles_elapsed.avg.per_second": "SM clock",
    "smsp__sass_inst_executed_op_shared_ld.sum": "LDS instr",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "LDS wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "LDS conflicts",
    "smsp__sass_inst_executed_op_shared_st.sum": "STS instr",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "STS wavefronts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "STS conflicts",
}
for _reason in ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "math_pipe_throttle", "wait",
                "not_selected", "dispatch_stall", "no_instruction", "branch_resolving"):
    SHORT[f"smsp__average_warps_issue_stalled_{_reason}_per_issue_active.ratio"] = f"stall {_reason}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", type=Path)
    p.add_argument("--labels", type=Path)
    args = p.parse_args()
    text = args.csv.read_text()
    start = text.find('"ID"')
    if start < 0:
        print(f"no ncu data in {args.csv}:\n{text[-2000:]}", file=sys.stderr)
        return 1
    rows = list(csv.reader(text[start:].splitlines()))
    header, units, data = rows[0], rows[1], rows[2:]
    labels = []
    if args.labels and args.labels.exists():
        launches = read_child_output(args.labels.read_text()).labels
        labels = [describe(launches[i]) for i in sorted(launches)]
    columns = [m for m in SHORT if m in header]
    body = []
    for i, row in enumerate(data):
        record = dict(zip(header, row))
        name = labels[i] if i < len(labels) else record.get("Kernel Name", "")[:40]
        body.append([name] + [f"{record[m]} {units[header.index(m)]}".strip() for m in columns])
    print(tabulate(body, ["launch"] + [SHORT[m] for m in columns], tablefmt="github", disable_numparse=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
