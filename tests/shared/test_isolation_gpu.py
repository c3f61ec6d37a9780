"""GPU: a kernel that stores at an illegal address and one that never finishes, between two good rungs,
at two sizes: every good result is there and right, the faulting one says fault, the hanging one timeout,
and the innocent Triton sides of both rungs are measured as usual."""

import pytest
import torch

from implementations import select
from implementations.core import bench, cli, isolation, report
from implementations.core.tasks import parse_modules, plan

pytestmark = pytest.mark.gpu


def test_faults_and_hangs_cost_one_result_each(tmp_path):
    v01, v02 = select("1,2")
    faulting, hanging = parse_modules("tests.faults.v90_faulting,tests.faults.v91_hanging")
    tasks = list(plan([v01, faulting, hanging, v02], ("cuda", "triton"), [(256, 256, 256), (300, 200, 100)]))
    log = report.ResultLog({}, json_path=tmp_path / "run.json")
    worker = isolation.Worker(timeout_s=20, is_fault=cli.sticky_result, preload=(cli.__name__,))
    try:
        cli.run_tasks(tasks, log, dtype="fp32", device=torch.device("cuda"), seed=0,
                      timing=bench.TimingOptions(warmup_ms=1, rep_ms=5, min_runs=3), worker=worker)
    finally:
        worker.close()
    got = [(r.rung, r.impl, r.status) for r in log.results]
    expected = [("v01", "cuda", "ok"), ("v01", "triton", "ok"), ("v90", "cuda", "fault"), ("v90", "triton", "ok"),
                ("v91", "cuda", "timeout"), ("v91", "triton", "ok"), ("v02", "cuda", "ok"), ("v02", "triton", "ok")]
    assert got == expected * 2, got
    fault = log.results[2]
    assert "illegal" in fault.note and "faulting in v90_faulting.cu, grid (1,), block (32,)" in fault.note, fault.note
    assert all(r.ms is not None and r.error is not None for r in log.results if r.status == "ok")
