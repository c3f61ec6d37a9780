"""A rung whose CUDA C kernel never finishes; its Triton side is v01's, innocent."""

from pathlib import Path

import torch

from implementations.core.cuda_c import CudaSource, bind
from implementations.core.registry import Variant
from implementations.v01_naive import naive_triton

KERNELS = CudaSource(__name__, ["hanging"], directory=Path(__file__).parent)


def hanging_cuda(a, b, c):
    flag = torch.zeros(1, dtype=torch.int32, device=c.device)
    return bind(KERNELS, "hanging", (1,), (32,), (flag,))


VARIANT = Variant(__name__, title="hangs on purpose", dtypes=("fp32",), cuda=hanging_cuda, triton=naive_triton,
                  cuda_source=KERNELS)
