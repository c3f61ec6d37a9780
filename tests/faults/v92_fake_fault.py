"""CPU stand-in for a faulting kernel: its Triton launcher reports the CUDA error an illegal address gives."""

from implementations.core.registry import Variant
from implementations.v01_naive import naive_triton


def fake_fault_triton(a, b, c):
    naive_triton(a, b, c)  # a real Triton launcher is bound (so CPU tensors go to the interpreter), never run

    def run():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    return run


VARIANT = Variant(__name__, title="reports a lost context", dtypes=("fp32",), cuda=None, triton=fake_fault_triton,
                  cuda_source=None)
