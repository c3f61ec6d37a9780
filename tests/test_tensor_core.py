"""CPU checks of what the tensor-core rungs add to the shared layer: TMA-ready operands, sm_90a targets."""

from unittest import mock

import numpy as np
import pytest
import torch

from implementations import select
from implementations.core.cli import Task, skip_reason
from implementations.core.cuda_c import TENSOR_MAP_DTYPE, CudaSource, _kernel_arg
from implementations.v14_wgmma_tma import tma_operands


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tma_operands_pad_rows_to_16_bytes_and_keep_the_product(dtype):
    a = torch.randn(5, 7).to(dtype)
    b = torch.randn(7, 3).to(dtype)
    a_t, b_t, refresh = tma_operands(a, b)
    refresh()
    assert a_t.shape == (5, 8) and b_t.shape == (8, 8), "rows padded to 8 elements = 16 bytes"
    assert torch.equal(a_t[:, :7], a) and torch.equal(b_t[:7, :3], b)
    assert not a_t[:, 7:].any() and not b_t[7:].any() and not b_t[:, 3:].any(), "zeros: the product is unchanged"
    assert torch.equal((a_t.float() @ b_t.float())[:, :3], a.float() @ b.float())


def test_tma_operands_leave_aligned_operands_alone():
    a, b = torch.randn(4, 16).half(), torch.randn(16, 8).half()
    a_t, b_t, _ = tma_operands(a, b)
    assert a_t is a and b_t is b


def test_bf16_tensors_go_to_kernels_as_addresses_and_tensor_maps_as_128_byte_structs():
    t = torch.zeros(4, dtype=torch.bfloat16)  # CuPy has no bf16 dtype: an array view would fail
    assert _kernel_arg(t) == np.uint64(t.data_ptr())
    assert TENSOR_MAP_DTYPE.itemsize == 128
    assert isinstance(_kernel_arg(np.zeros((), TENSOR_MAP_DTYPE)[()]), np.void)
    with pytest.raises(TypeError, match="numpy scalars"):
        _kernel_arg(3)


def test_sm90a_code_runs_on_hopper_only():
    hopper = CudaSource("implementations.v14_wgmma_tma", [], arch="sm_90a")
    assert hopper.runs_on((9, 0)) and not hopper.runs_on((10, 0)) and not hopper.runs_on((8, 0))
    assert hopper.archs == ("sm_90a",)
    assert CudaSource("implementations.v13_mma_sync", []).runs_on((12, 0))


@pytest.mark.parametrize("capability, cuda_reason", [((9, 0), ""), ((10, 0), "sm_90a"), ((8, 9), "9.0")])
def test_hopper_rungs_are_skipped_with_the_reason_on_other_gpus(capability, cuda_reason):
    (v14,) = select("14")
    device = torch.device("cuda", 0)
    with mock.patch("torch.cuda.get_device_capability", return_value=capability):
        cuda = skip_reason(Task(v14, {}, "cuda", (64, 64, 64)), "bf16", device)
        triton = skip_reason(Task(v14, {}, "triton", (64, 64, 64)), "bf16", device)
    assert (cuda_reason in cuda) and (bool(cuda) == bool(cuda_reason))
    assert triton == ("" if capability >= (9, 0) else cuda)
    with mock.patch("torch.cuda.get_device_capability", return_value=(9, 0)):
        assert "supports fp16, bf16 only" in skip_reason(Task(v14, {}, "cuda", (64, 64, 64)), "fp32", device)


def test_a_searched_triton_run_launches_its_choice_directly_after_the_search():
    """The autotuner searches at the first call; later calls bypass its per-call dispatch."""
    from implementations import v15_warp_specialized as v15

    calls = []
    best = v15.TRITON_CONFIGS[1]

    class FakeAutotuner:
        best_config = None

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                calls.append("autotuned")
                FakeAutotuner.best_config = best
            return launch

    def launch_one(a, b, c, config):
        assert config is best
        return lambda: calls.append("direct")

    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    run = v15.searched_triton(a, b, torch.empty(64, 64).half(), object(), FakeAutotuner(), v15.TRITON_CONFIGS,
                              launch_one)
    for _ in range(3):
        run()
    assert calls == ["autotuned", "direct", "direct"]
    assert run.chosen().startswith(v15.describe(best))
    assert run.tile() == (best.kwargs["BLOCK_M"], best.kwargs["BLOCK_N"])
