"""A faulting or hanging implementation costs one result, not the run (core/isolation.py): the worker
process, and the task runner resuming in a fresh one. On the CPU with stand-ins for the CUDA failures;
tests/shared/test_isolation_gpu.py runs real faulting and hanging kernels."""

import os
import time

import pytest
import torch

from implementations import select
from implementations.core import bench, cli, isolation, report
from implementations.core.tasks import parse_modules, plan

FAULTS = parse_modules("tests.faults.v92_fake_fault,tests.faults.v93_fake_hang")
# On a GPU, tests/shared/test_isolation_gpu.py runs the same with kernels that really fault and hang.
cpu_only = pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU test runs real faulting and hanging kernels")


def pid():
    return os.getpid()


def lost_context():
    return bench.Result("v92", "fake", "", "triton", "fp32", 1, 1, 1, status=bench.STATUS_ERROR,
                        note="AcceleratorError: CUDA error: an illegal memory access was encountered")


def hang():
    time.sleep(3600)


def crash():
    os._exit(7)


def refuse():
    raise ValueError("bad input")


@cpu_only
def test_a_fault_a_hang_a_crash_and_an_exception_each_cost_one_call():
    worker = isolation.Worker(timeout_s=10, is_fault=cli.sticky_result, preload=(__name__,))
    try:
        first = worker.call(pid)
        assert first.kind == "ok" and first.value != os.getpid()
        assert worker.call(pid).value == first.value, "a healthy worker is reused"
        fault = worker.call(lost_context)
        assert fault.kind == "fault" and "illegal memory access" in fault.detail
        second = worker.call(pid)
        assert second.kind == "ok" and second.value != first.value, "after a fault, a fresh process"
        assert worker.call(hang).kind == "timeout"
        assert worker.call(crash).kind == "died"
        raised = worker.call(refuse)
        assert raised.kind == "raised" and raised.value == "ValueError: bad input"
        assert worker.call(pid).kind == "ok"
    finally:
        worker.close()


@cpu_only
def test_the_run_goes_on_after_a_fault_and_a_hang_and_keeps_every_other_result(tmp_path):
    """v01 and v02 on either side of a rung that loses its context and one that never returns, two sizes."""
    v01, v02 = select("1,2")
    tasks = list(plan([v01, *FAULTS, v02], ("triton",), [(17, 33, 5), (9, 8, 7)]))
    log = report.ResultLog({}, json_path=tmp_path / "run.json")
    worker = isolation.Worker(timeout_s=10, is_fault=cli.sticky_result, preload=(cli.__name__,))
    try:
        cli.run_tasks(tasks, log, dtype="fp32", device=torch.device("cpu"), seed=0, timing=None, worker=worker)
    finally:
        worker.close()
    statuses = [(r.rung, r.status) for r in log.results]
    assert statuses == [("v01", "ok"), ("v92", "fault"), ("v93", "timeout"), ("v02", "ok")] * 2, statuses
    fault, timeout = log.results[1], log.results[2]
    assert "illegal memory access" in fault.note and "fresh process" in fault.note
    assert "no result within 10 s" in timeout.note
    saved = report.load_document(tmp_path / "run.json")
    assert [r["status"] for r in saved["results"]] == [s for _, s in statuses]


@pytest.mark.parametrize("text, message", [("no.such.module", "cannot import"), ("os", "defines no VARIANT")])
def test_rung_modules_from_outside_must_define_a_variant(text, message):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse_modules(text)
