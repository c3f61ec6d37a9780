"""CPU checks of the CUDA C plumbing the tensor-core rungs use: tensor maps and addresses as kernel
arguments, sm_90a targets and the reason given on other GPUs."""

from unittest import mock

import numpy as np
import pytest
import torch

from implementations import select
from implementations.core.cli import Task, skip_reason
from implementations.core.cuda_c import TENSOR_MAP_DTYPE, CudaSource, _kernel_arg


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
