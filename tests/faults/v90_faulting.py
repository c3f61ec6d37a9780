"""A rung whose CUDA C kernel stores at an illegal address; its Triton side is v01's, innocent."""

from pathlib import Path

from implementations.core.cuda_c import CudaSource, bind
from implementations.core.registry import Variant
from implementations.v01_naive import naive_triton

KERNELS = CudaSource(__name__, ["faulting"], directory=Path(__file__).parent)


def faulting_cuda(a, b, c):
    return bind(KERNELS, "faulting", (1,), (32,), (c,))


VARIANT = Variant(__name__, title="faults on purpose", dtypes=("fp32",), cuda=faulting_cuda, triton=naive_triton,
                  cuda_source=KERNELS)
